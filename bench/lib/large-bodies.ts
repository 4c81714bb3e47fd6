/**
 * Large bodies beside ordinary traffic: ordinary chat throughput at 50 connections, quiet and then while 3 MB bodies
 * of 25,000 random text parts (the tokenizer's slow end) keep arriving, two at a time, while /health is asked every
 * 20 ms. Twice: from a key that is rate-limited (each body refused; tokenizing it would hold the event loop for
 * seconds), then from one that is admitted (each body counted in slices, then refused for its size by the model's
 * context: all of the tokenizer's work, none of the upstream's).
 */
import { randomBytes } from 'node:crypto';
import { request } from 'undici';
import { runLoad, type Endpoint, type Tool } from './load.js';
import type { ConfigResult, LargeBodiesResult } from './report.js';
import { call } from './setup.js';

export interface LargeBodySettings {
  connections: number;
  throughputS: number;
}

/** 25,000 parts of 120 random base64 characters: about 3.15 MB, as in the issue that found the stall. */
export function largeBody(model: string): string {
  const parts = Array.from({ length: 25_000 }, () => ({
    type: 'text',
    text: randomBytes(90).toString('base64'),
  }));
  return JSON.stringify({ model, max_tokens: 16, messages: [{ role: 'user', content: parts }] });
}

export async function measureLargeBodies(
  result: ConfigResult,
  settings: LargeBodySettings,
  tool: Tool,
  tollgate: { url: string; adminToken: string; ordinary: Endpoint; model: string },
  write: (text: string) => void,
): Promise<void> {
  const body = largeBody(tollgate.model);
  const limited = await benchKey(tollgate.url, tollgate.adminToken, 1);
  const admitted = await benchKey(tollgate.url, tollgate.adminToken, 1_000_000);
  await send(
    tollgate.url,
    limited,
    JSON.stringify({ model: tollgate.model, messages: [{ role: 'user', content: 'hi' }] }),
  );

  write(`   ${result.name}/tollgate: ordinary throughput quiet, then beside 3 MB bodies...`);
  const quiet = await runLoad(tool, tollgate.ordinary, settings.connections, settings.throughputS);
  const runs: LargeBodiesResult['runs'] = [];
  for (const [from, key] of [
    ['rate-limited key', limited],
    ['admitted key', admitted],
  ] as const) {
    const stop = new AbortController();
    const health = pollHealth(tollgate.url, stop.signal);
    const senders = [0, 1].map(() => sendUntil(tollgate.url, key, body, stop.signal));
    const load = await runLoad(tool, tollgate.ordinary, settings.connections, settings.throughputS);
    stop.abort();
    const statuses = (await Promise.all(senders)).flat();
    const latencies = (await health).sort((a, b) => a - b);
    runs.push({
      from,
      rps: load.rps,
      ofQuiet: load.rps / quiet.rps,
      largeBodies: statuses.length,
      statuses: countBy(statuses),
      healthP99Ms: latencies[Math.floor(latencies.length * 0.99)] ?? NaN,
      healthMaxMs: latencies.at(-1) ?? NaN,
    });
  }
  result.largeBodies = { quietRps: quiet.rps, runs };
  write(' done\n');
}

async function benchKey(base: string, adminToken: string, requestsPerMinute: number): Promise<string> {
  const account = await call<{ id: string; api_key: string }>('POST', `${base}/admin/accounts`, adminToken, {
    email: `bench-large-${requestsPerMinute}-${Date.now()}@example.com`,
    plan: 'enterprise',
  });
  await call('PATCH', `${base}/admin/accounts/${account.id}`, adminToken, {
    daily_limit: 'none',
    requests_per_minute: requestsPerMinute,
    tokens_per_minute: 1_000_000_000_000,
  });
  await call('POST', `${base}/admin/accounts/${account.id}/credits`, adminToken, { amount: 1_000, note: 'benchmark' });
  return account.api_key;
}

async function send(base: string, key: string, body: string, signal?: AbortSignal): Promise<number> {
  const res = await request(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body,
    signal,
  });
  await res.body.dump();
  return res.statusCode;
}

/** Sends `body` again and again until `stop`, which also cuts the one in flight (its count stops with it). */
async function sendUntil(base: string, key: string, body: string, stop: AbortSignal): Promise<number[]> {
  const statuses: number[] = [];
  while (!stop.aborted) {
    const status = await send(base, key, body, stop).catch(() => undefined);
    if (status !== undefined) statuses.push(status);
  }
  return statuses;
}

/** /health's answer times, asked every 20 ms until `stop`. */
async function pollHealth(base: string, stop: AbortSignal): Promise<number[]> {
  const times: number[] = [];
  while (!stop.aborted) {
    const started = performance.now();
    const res = await request(`${base}/health`);
    await res.body.dump();
    times.push(performance.now() - started);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return times;
}

function countBy(statuses: number[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const status of statuses) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
}
