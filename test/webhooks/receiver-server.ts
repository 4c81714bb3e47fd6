/** A real HTTP receiver on loopback that records every delivery and answers as a test tells it to. */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  path: string;
  at: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** When the sender closed the connection (timeouts). */
  closedAt?: number;
}

/** Status to answer, or 'hang' to never answer. */
export type Respond = (received: Received, index: number) => number | 'hang';

export interface Receiver {
  url: string;
  received: Received[];
  /** Resolves once `count` deliveries (matching `where`) have arrived. */
  waitFor(count: number, where?: (r: Received) => boolean, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

export async function startReceiver(respond: Respond = () => 200): Promise<Receiver> {
  const received: Received[] = [];
  const waiters = new Set<() => void>();
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const entry: Received = {
        path: request.url ?? '/',
        at: Date.now(),
        headers: request.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      const index = received.push(entry) - 1;
      response.on('close', () => (entry.closedAt = Date.now()));
      for (const wake of waiters) wake();
      const answer = respond(entry, index);
      if (answer === 'hang') return;
      response.writeHead(answer, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    waitFor(count, where = () => true, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const matching = received.filter(where);
          if (matching.length >= count) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(matching);
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`expected ${count} deliveries, got ${received.filter(where).length}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Test settings: private URLs allowed (receivers are on loopback), quick polling. */
export const TEST_WEBHOOKS = {
  allow_private_urls: true,
  poll_interval_ms: 25,
  concurrency: 16,
  max_in_flight_per_endpoint: 4,
  max_in_flight_per_account: 8,
  refresh_ms: 200,
  max_buffered: 10_000,
};
