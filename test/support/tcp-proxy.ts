/**
 * A TCP proxy for outage tests: the gateway connects through it, and the test cuts the line without touching
 * the real server other tests use. Outages:
 * - 'refuse': open connections are closed, new ones closed at once (the server is gone);
 * - 'blackhole': open connections are closed, new ones held open in silence (packets dropped);
 * - 'freeze': open connections stay open but nothing passes, new ones are held (a silent partition).
 */
import { connect, createServer, type Socket } from 'node:net';

export type Outage = 'refuse' | 'blackhole' | 'freeze';

export interface TcpProxy {
  port: number;
  /** The same URL with its host and port replaced by the proxy's. */
  rewrite(url: string): string;
  down(outage?: Outage): void;
  up(): void;
  close(): Promise<void>;
}

interface Pair {
  client: Socket;
  upstream: Socket;
}

export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  let outage: Outage | undefined;
  const pairs = new Set<Pair>();
  const held = new Set<Socket>();
  const link = ({ client, upstream }: Pair) => {
    client.pipe(upstream);
    upstream.pipe(client);
  };
  const server = createServer((client) => {
    client.on('error', () => client.destroy());
    if (outage === 'refuse') return client.destroy();
    if (outage) {
      held.add(client);
      client.on('close', () => held.delete(client));
      return;
    }
    const pair = { client, upstream: connect(target.port, target.host) };
    pair.upstream.on('error', () => pair.upstream.destroy());
    pairs.add(pair);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      pair.upstream.destroy();
    };
    client.on('close', end);
    pair.upstream.on('close', end);
    link(pair);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  const cutAll = () => {
    for (const { client } of pairs) client.destroy();
    for (const socket of held) socket.destroy();
  };
  return {
    port,
    rewrite(url) {
      const parsed = new URL(url);
      parsed.host = `127.0.0.1:${port}`;
      return parsed.toString();
    },
    down(kind = 'refuse') {
      outage = kind;
      if (kind !== 'freeze') return cutAll();
      for (const { client, upstream } of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
      }
    },
    up() {
      if (outage === 'freeze') for (const pair of pairs) link(pair);
      outage = undefined;
    },
    async close() {
      cutAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
