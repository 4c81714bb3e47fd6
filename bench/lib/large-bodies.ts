/**
 * Large bodies beside ordinary traffic: ordinary chat throughput at 50 connections, quiet and while 3 MB bodies
 * of 25,000 random text parts (the tokenizer's slow end) keep arriving, two at a time, at most one every
 * `BODY_PERIOD_MS` per sender, while /health is asked every 20 ms (quiet too; both from a process of their own,
 * `bench/large-body-client.ts`). Twice: from a key that is rate-limited (each body refused; tokenizing it would hold
 * the event loop for seconds), then from one that is admitted (each body counted in slices, then refused for its
 * size by the model's context: all of the tokenizer's work, none of the upstream's). The three kinds of slice take
 * turns, `ROUNDS` times, so that drift in the machine's speed hits them alike. tollgate's CPU per large body
 * is what it used beyond the quiet run's CPU per ordinary request, over the bodies answered.
 */
import { fork } from 'node:child_process';
import { request } from 'undici';
import { rotate, runLoad, summarize, type Endpoint, type Tool } from './load.js';
import { onCleanup, readProc } from './processes.js';
import type { ConfigResult } from './report.js';
import { call } from './setup.js';

export interface LargeBodySettings {
  connections: number;
  throughputS: number;
}

/** Each sender starts a body at most this often: two senders, 10 bodies (31.5 MB) a second at most. */
const BODY_PERIOD_MS = 200;
/** Rounds of slices (quiet, beside refused bodies, beside admitted ones), each round in a rotated order. */
const ROUNDS = 3;

export async function measureLargeBodies(
  result: ConfigResult,
  settings: LargeBodySettings,
  tool: Tool,
  tollgate: { url: string; pid: number; adminToken: string; ordinary: Endpoint; model: string },
  clientFile: string,
  write: (text: string) => void,
): Promise<void> {
  const limited = await benchKey(tollgate.url, tollgate.adminToken, 1);
  const admitted = await benchKey(tollgate.url, tollgate.adminToken, 1_000_000);
  await send(
    tollgate.url,
    limited,
    JSON.stringify({ model: tollgate.model, messages: [{ role: 'user', content: 'hi' }] }),
  );

  write(`   ${result.name}/tollgate: ordinary throughput quiet and beside 3 MB bodies, ${ROUNDS} rounds...`);
  const cpu = () => readProc(tollgate.pid).cpuSeconds;
  const kinds: Slices[] = [
    { from: 'quiet', key: undefined },
    { from: 'rate-limited key', key: limited },
    { from: 'admitted key', key: admitted },
  ].map((kind) => ({ ...kind, answered: 0, seconds: 0, requests: 0, cpu: 0, statuses: [], health: [] }));
  for (let round = 0; round < ROUNDS; round++) {
    for (const kind of rotate(kinds, round)) {
      const health = await startClient(clientFile, { url: tollgate.url, model: tollgate.model });
      const bodies = kind.key
        ? await startClient(clientFile, { url: tollgate.url, key: kind.key, model: tollgate.model })
        : undefined;
      const before = cpu();
      const load = await runLoad(tool, tollgate.ordinary, settings.connections, settings.throughputS / 2);
      kind.cpu += cpu() - before;
      const statuses = (await bodies?.stop())?.statuses ?? [];
      kind.health.push(...(await health.stop()).health);
      kind.answered += load.rps * load.durationS;
      kind.seconds += load.durationS;
      kind.requests += load.requests;
      kind.statuses.push(...statuses);
    }
  }
  const [quiet, ...beside] = kinds as [Slices, ...Slices[]];
  const quietRps = quiet.answered / quiet.seconds;
  const cpuPerRequest = quiet.cpu / Math.max(1, quiet.requests);
  const quietHealth = summarize(quiet.health);
  result.largeBodies = {
    quietRps,
    quietHealthP99Ms: quietHealth.p99,
    quietHealthMaxMs: quietHealth.max,
    bodyPeriodMs: BODY_PERIOD_MS,
    runs: beside.map((kind) => {
      const health = summarize(kind.health);
      return {
        from: kind.from,
        rps: kind.answered / kind.seconds,
        ofQuiet: kind.answered / kind.seconds / quietRps,
        largeBodies: kind.statuses.length,
        statuses: countBy(kind.statuses),
        cpuMsPerBody: kind.statuses.length
          ? (1000 * (kind.cpu - kind.requests * cpuPerRequest)) / kind.statuses.length
          : NaN,
        healthP99Ms: health.p99,
        healthMaxMs: health.max,
      };
    }),
  };
  write(' done\n');
}

/** One kind of slice (quiet, or beside one key's bodies), summed over the rounds. */
interface Slices {
  from: string;
  key: string | undefined;
  /** Ordinary requests answered 2xx, and over how many seconds. */
  answered: number;
  seconds: number;
  requests: number;
  /** tollgate's CPU seconds. */
  cpu: number;
  statuses: number[];
  health: number[];
}

interface ClientReport {
  statuses: number[];
  health: number[];
}

/** The sender process, started and sending; `stop` ends it and gives its figures. */
async function startClient(
  file: string,
  start: { url: string; key?: string; model: string },
): Promise<{ stop: () => Promise<ClientReport> }> {
  const child = fork(file, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const unregister = onCleanup(() => void child.kill('SIGKILL'));
  const next = <T>() =>
    new Promise<T>((resolve, reject) => {
      child.once('message', (message) => resolve(message as T));
      child.once('exit', (code) => reject(new Error(`the large-body client exited with ${code}`)));
    });
  const started = next<string>();
  child.send({ ...start, periodMs: BODY_PERIOD_MS });
  await started;
  return {
    stop: async () => {
      const report = next<ClientReport>();
      child.send('stop');
      const figures = await report;
      unregister();
      return figures;
    },
  };
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

async function send(base: string, key: string, body: string): Promise<number> {
  const res = await request(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body,
  });
  await res.body.dump();
  return res.statusCode;
}

function countBy(statuses: number[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const status of statuses) counts[status] = (counts[status] ?? 0) + 1;
  return counts;
}
