/** Load generation: wrk (when installed) or autocannon, plus a sequential undici client for latency figures. */
import { execFileSync, spawn } from 'node:child_process';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { Client } from 'undici';
import { BENCH_DIR, onCleanup } from './processes.js';

export type Tool = 'wrk' | 'autocannon';

export interface Endpoint {
  /** Full URL of the chat-completions endpoint. */
  url: string;
  /** Bearer token, if the server needs one. */
  auth?: string;
  body: string;
}

export interface LoadResult {
  /** What produced the figures: wrk, autocannon, or the bench's own sequential undici client. */
  tool: Tool | 'undici';
  connections: number;
  durationS: number;
  /** Completed requests. */
  requests: number;
  rps: number;
  /** Requests that failed: non-2xx answers, socket errors and timeouts. */
  errors: number;
  errorDetail: Record<string, number>;
  latencyMs: { mean: number; p50: number; p90: number; p99: number; max: number };
}

export function wrkInstalled(): boolean {
  try {
    execFileSync('wrk', ['--version'], { stdio: 'ignore' });
    return true;
  } catch (error) {
    // wrk --version exits 1 after printing its banner; only a missing binary is ENOENT.
    return (error as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}

export function headersFor(endpoint: Endpoint): Record<string, string> {
  return { 'content-type': 'application/json', ...(endpoint.auth ? { authorization: `Bearer ${endpoint.auth}` } : {}) };
}

/** Closed-loop load: `connections` connections, each sending the next request as soon as the answer is in. */
export async function runLoad(
  tool: Tool,
  endpoint: Endpoint,
  connections: number,
  durationS: number,
): Promise<LoadResult> {
  return tool === 'wrk' ? runWrk(endpoint, connections, durationS) : runAutocannon(endpoint, connections, durationS);
}

interface WrkSummary {
  requests: number;
  duration_us: number;
  errors: Record<'connect' | 'read' | 'write' | 'status' | 'timeout', number>;
  latency_us: { mean: number; p50: number; p90: number; p99: number; max: number };
}

async function runWrk(endpoint: Endpoint, connections: number, durationS: number): Promise<LoadResult> {
  // One wrk thread drives ~50k req/s, far above any server here, and leaves the other cores to the servers.
  const args = [
    '-t1',
    `-c${connections}`,
    `-d${Math.round(durationS)}s`,
    '--timeout',
    '10s',
    '-s',
    join(BENCH_DIR, 'post.lua'),
    endpoint.url,
  ];
  const child = spawn('wrk', args, {
    env: { ...process.env, BENCH_BODY: endpoint.body, BENCH_AUTH: endpoint.auth ?? '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const unregister = onCleanup(() => {
    child.kill('SIGKILL');
  });
  let out = '';
  child.stdout.on('data', (part: Buffer) => (out += part.toString()));
  child.stderr.on('data', (part: Buffer) => (out += part.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', resolve);
  }).finally(unregister);
  const line = out.split('\n').find((l) => l.startsWith('BENCH_RESULT '));
  if (code !== 0 || !line) throw new Error(`wrk ${args.join(' ')} failed (exit ${code}):\n${out}`);
  const summary = JSON.parse(line.slice('BENCH_RESULT '.length)) as WrkSummary;
  const ms = (us: number) => us / 1000;
  const errors = Object.values(summary.errors).reduce((a, b) => a + b, 0);
  const seconds = summary.duration_us / 1e6;
  return {
    tool: 'wrk',
    connections,
    durationS: seconds,
    requests: summary.requests,
    // wrk counts non-2xx answers among its requests; throughput is what succeeded.
    rps: (summary.requests - summary.errors.status) / seconds,
    errors,
    errorDetail: Object.fromEntries(Object.entries(summary.errors).filter(([, n]) => n > 0)),
    latencyMs: {
      mean: ms(summary.latency_us.mean),
      p50: ms(summary.latency_us.p50),
      p90: ms(summary.latency_us.p90),
      p99: ms(summary.latency_us.p99),
      max: ms(summary.latency_us.max),
    },
  };
}

async function runAutocannon(endpoint: Endpoint, connections: number, durationS: number): Promise<LoadResult> {
  const result = await autocannon({
    url: endpoint.url,
    connections,
    duration: durationS,
    method: 'POST',
    body: endpoint.body,
    headers: headersFor(endpoint),
    timeout: 10,
  });
  const detail: Record<string, number> = {
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    resets: result.resets,
  };
  return {
    tool: 'autocannon',
    connections,
    durationS: result.duration,
    requests: result.requests.total,
    rps: result['2xx'] / result.duration,
    errors: result.non2xx + result.errors,
    errorDetail: Object.fromEntries(Object.entries(detail).filter(([, n]) => n > 0)),
    // autocannon's latency histogram counts whole milliseconds: fine at 50 connections, too coarse at one.
    latencyMs: {
      mean: result.latency.mean,
      p50: result.latency.p50,
      p90: result.latency.p90,
      p99: result.latency.p99,
      max: result.latency.max,
    },
  };
}

/**
 * Latency at one connection: wrk -c1 -t1 when wrk is the tool (microsecond histogram); otherwise a sequential
 * undici client timing each request with `performance.now()`.
 */
export async function runLatency(tool: Tool, endpoint: Endpoint, durationS: number): Promise<LoadResult> {
  if (tool === 'wrk') return runWrk(endpoint, 1, durationS);
  const url = new URL(endpoint.url);
  const client = new Client(url.origin, { pipelining: 1 });
  const headers = headersFor(endpoint);
  const samples: number[] = [];
  const detail: Record<string, number> = {};
  let errors = 0;
  const started = performance.now();
  const end = started + durationS * 1000;
  try {
    while (performance.now() < end) {
      const t0 = performance.now();
      try {
        const res = await client.request({
          method: 'POST',
          path: url.pathname + url.search,
          headers,
          body: endpoint.body,
        });
        await res.body.text();
        if (res.statusCode < 200 || res.statusCode > 299) {
          errors++;
          detail[`status_${res.statusCode}`] = (detail[`status_${res.statusCode}`] ?? 0) + 1;
          continue;
        }
      } catch (error) {
        errors++;
        const code = (error as NodeJS.ErrnoException).code ?? 'error';
        detail[code] = (detail[code] ?? 0) + 1;
        continue;
      }
      samples.push(performance.now() - t0);
    }
  } finally {
    await client.close();
  }
  const seconds = (performance.now() - started) / 1000;
  return {
    tool: 'undici',
    connections: 1,
    durationS: seconds,
    requests: samples.length + errors,
    rps: samples.length / seconds,
    errors,
    errorDetail: detail,
    latencyMs: summarize(samples),
  };
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}

export function summarize(samples: number[]): LoadResult['latencyMs'] {
  const sorted = [...samples].sort((a, b) => a - b);
  const mean = sorted.reduce((a, b) => a + b, 0) / (sorted.length || 1);
  return {
    mean,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1] ?? NaN,
  };
}

/** `list` started at `round` (mod its length). */
export function rotate<T>(list: T[], round: number): T[] {
  const k = round % list.length;
  return [...list.slice(k), ...list.slice(0, k)];
}

/** Slices of one target as one run: counts and seconds summed; latency percentiles averaged, weighted by requests. */
export function combineLoads(loads: LoadResult[]): LoadResult {
  const requests = loads.reduce((sum, l) => sum + l.requests, 0);
  const durationS = loads.reduce((sum, l) => sum + l.durationS, 0);
  const errorDetail: Record<string, number> = {};
  for (const l of loads) for (const [k, v] of Object.entries(l.errorDetail)) errorDetail[k] = (errorDetail[k] ?? 0) + v;
  const weighted = (pick: (l: LoadResult) => number) =>
    loads.reduce((sum, l) => sum + pick(l) * l.requests, 0) / Math.max(1, requests);
  return {
    ...loads[0]!,
    durationS,
    requests,
    rps: requests / durationS,
    errors: loads.reduce((sum, l) => sum + l.errors, 0),
    errorDetail,
    latencyMs: {
      mean: weighted((l) => l.latencyMs.mean),
      p50: weighted((l) => l.latencyMs.p50),
      p90: weighted((l) => l.latencyMs.p90),
      p99: weighted((l) => l.latencyMs.p99),
      max: Math.max(...loads.map((l) => l.latencyMs.max)),
    },
  };
}
