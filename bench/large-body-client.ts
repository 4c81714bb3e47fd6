/**
 * The benchmark's sender of large bodies, a process of its own so that making and sending 3 MB uploads does not
 * share the load generator's event loop (autocannon runs in the runner's). Self-contained (Node built-ins only):
 * `bench/run.ts` compiles it to plain JavaScript and starts it with `node` and an IPC channel.
 *
 * On `{ url, key, model, periodMs }` it starts two senders, each sending a body of 25,000 random text parts (3.15 MB,
 * built once) and starting the next `periodMs` after the last began (or at once, if the answer took longer); on
 * `{ url }` alone, it asks `/health` every 20 ms. On `'stop'` it cuts the bodies in flight, sends back `{ statuses, health }` (each
 * answer's status, each /health time in ms) and exits.
 */
import { randomBytes } from 'node:crypto';

interface Start {
  url: string;
  /** With a key, it sends bodies; without, it asks /health (each in a process of its own: timing /health beside
   * 3 MB uploads in one event loop would time the uploads). */
  key?: string;
  model: string;
  periodMs: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** 25,000 parts of 120 random base64 characters: about 3.15 MB, as in the issue that found the stall. */
function largeBody(model: string): Buffer {
  const parts = Array.from({ length: 25_000 }, () => ({ type: 'text', text: randomBytes(90).toString('base64') }));
  return Buffer.from(JSON.stringify({ model, max_tokens: 16, messages: [{ role: 'user', content: parts }] }));
}

async function sendUntil(start: Start, body: Buffer, stop: AbortSignal, statuses: number[]): Promise<void> {
  while (!stop.aborted) {
    const began = performance.now();
    try {
      const res = await fetch(`${start.url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${start.key}`, 'content-type': 'application/json' },
        body,
        signal: stop,
      });
      await res.arrayBuffer();
      statuses.push(res.status);
    } catch {
      // cut by stop
    }
    await sleep(Math.max(0, start.periodMs - (performance.now() - began)));
  }
}

async function pollHealth(url: string, stop: AbortSignal, times: number[]): Promise<void> {
  while (!stop.aborted) {
    const began = performance.now();
    const res = await fetch(`${url}/health`);
    await res.arrayBuffer();
    times.push(performance.now() - began);
    await sleep(20);
  }
}

process.once('message', (start: Start) => {
  const stop = new AbortController();
  const statuses: number[] = [];
  const health: number[] = [];
  const body = start.key ? largeBody(start.model) : undefined;
  const work = Promise.all(
    body
      ? [sendUntil(start, body, stop.signal, statuses), sendUntil(start, body, stop.signal, statuses)]
      : [pollHealth(start.url, stop.signal, health)],
  );
  process.once('message', () => {
    stop.abort();
    void work.finally(() => process.send!({ statuses, health }, () => process.exit(0)));
  });
  process.send!('started');
});
process.on('disconnect', () => process.exit(0));
