import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import { plainJson } from '../money/index.js';
import type { StreamEvent } from '../wire/index.js';
import type { ClientSignal } from './client-signal.js';

const KEEP_ALIVE_MS = 15_000;

/** Writes the events the gateway yields as server-sent events, with backpressure and keep-alive comments while idle. */
export async function writeEventStream(
  res: ServerResponse,
  result: { headers: Record<string, string>; events: AsyncGenerator<StreamEvent, void, undefined> },
  client: ClientSignal,
  onError: (error: unknown) => void,
): Promise<void> {
  res.writeHead(200, {
    ...result.headers,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  let lastWrite = Date.now();
  const keepAlive = setInterval(() => {
    if (Date.now() - lastWrite >= KEEP_ALIVE_MS && !res.writableEnded) res.write(': keep-alive\n\n');
  }, KEEP_ALIVE_MS / 3);
  try {
    for await (const event of result.events) {
      if (client.aborted) break;
      lastWrite = Date.now();
      if (!res.write(sseText(event))) await once(res, 'drain', { signal: client });
    }
  } catch (error) {
    if (!client.aborted) onError(error);
  } finally {
    clearInterval(keepAlive);
    await result.events.return(undefined);
    if (!res.writableEnded) res.end();
  }
}

/** An event as SSE text: its data's JSON written once, its numbers (USD costs) without exponents. */
export function sseText({ event, data }: StreamEvent): string {
  const json = typeof data === 'string' ? data : plainJson(JSON.stringify(data));
  return event === undefined ? `data: ${json}\n\n` : `event: ${event}\ndata: ${json}\n\n`;
}
