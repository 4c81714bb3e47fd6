/** Streaming measurements: time to first chunk and total time of sequential streams, and many streams at once. */
import { Client, Pool } from 'undici';
import { headersFor, summarize, type Endpoint, type LoadResult } from './load.js';
import { readMemory } from './processes.js';

/**
 * A streaming endpoint. `headers` are sent besides `headersFor`'s (Anthropic's `x-api-key`, `anthropic-version`);
 * `endEvent` names the event a complete stream ends with (`message_stop` for Messages, `response.completed` for
 * Responses); without it the stream must end with chat's `data: [DONE]`.
 */
export interface StreamEndpoint extends Endpoint {
  headers?: Record<string, string>;
  endEvent?: string;
}

const DONE = 'data: [DONE]\n\n';

export interface StreamStats {
  streams: number;
  failed: number;
  errorDetail: Record<string, number>;
  /** From sending the request to the first body bytes holding `data:`. */
  ttfbMs: LoadResult['latencyMs'];
  /** From sending the request to the end of the body (after `[DONE]`, or the end event). */
  totalMs: LoadResult['latencyMs'];
  /** Median number of separate body reads per stream: close to the number of events when chunks are relayed one by one. */
  readsP50: number;
  /** Median number of `data:` events per stream. */
  eventsP50: number;
}

interface OneStream {
  ok: boolean;
  error?: string;
  ttfbMs: number;
  totalMs: number;
  reads: number;
  events: number;
}

async function readStream(
  dispatcher: Client | Pool,
  endpoint: StreamEndpoint,
  onHeaders?: () => void,
): Promise<OneStream> {
  const url = new URL(endpoint.url);
  const { endEvent } = endpoint;
  const t0 = performance.now();
  let ttfbMs = NaN;
  let reads = 0;
  let events = 0;
  let tail = '';
  // With `endEvent`: the name of the last `event:` line so far, and the unfinished line a read ended in.
  let lastEvent: string | undefined;
  let partial = '';
  try {
    const res = await dispatcher.request({
      method: 'POST',
      path: url.pathname + url.search,
      headers: { ...headersFor(endpoint), ...endpoint.headers },
      body: endpoint.body,
    });
    onHeaders?.();
    if (res.statusCode !== 200) {
      const text = await res.body.text();
      return {
        ok: false,
        error: `status_${res.statusCode}: ${text.slice(0, 200)}`,
        ttfbMs,
        totalMs: NaN,
        reads,
        events,
      };
    }
    for await (const part of res.body) {
      const text = (part as Buffer).toString('utf8');
      if (Number.isNaN(ttfbMs) && text.includes('data:')) ttfbMs = performance.now() - t0;
      reads++;
      events += text.split('data:').length - 1;
      tail = (tail + text).slice(-64);
      if (endEvent !== undefined) {
        const lines = (partial + text).split('\n');
        partial = lines.pop()!;
        for (const line of lines) if (line.startsWith('event:')) lastEvent = line.slice(6).trim();
      }
    }
    const totalMs = performance.now() - t0;
    // Complete: the expected last event, and its blank line.
    const complete = endEvent === undefined ? tail.endsWith(DONE) : lastEvent === endEvent && tail.endsWith('\n\n');
    if (!complete) {
      const error = `stream ended without ${endEvent === undefined ? '[DONE]' : `event: ${endEvent}`}`;
      return { ok: false, error, ttfbMs, totalMs, reads, events };
    }
    return { ok: true, ttfbMs, totalMs, reads, events };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).name;
    return { ok: false, error: code, ttfbMs, totalMs: NaN, reads, events };
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length ? sorted[Math.floor((sorted.length - 1) / 2)]! : NaN;
}

function countErrors(results: OneStream[]): Record<string, number> {
  const detail: Record<string, number> = {};
  for (const r of results) if (!r.ok) detail[r.error ?? 'error'] = (detail[r.error ?? 'error'] ?? 0) + 1;
  return detail;
}

/** `count` streams one after the other on one keep-alive connection, after `warmup` uncounted ones. */
export async function sequentialStreams(endpoint: StreamEndpoint, count: number, warmup = 2): Promise<StreamStats> {
  const client = new Client(new URL(endpoint.url).origin, { pipelining: 1 });
  const results: OneStream[] = [];
  try {
    for (let i = 0; i < warmup; i++) await readStream(client, endpoint);
    for (let i = 0; i < count; i++) results.push(await readStream(client, endpoint));
  } finally {
    await client.close();
  }
  const ok = results.filter((r) => r.ok);
  return {
    streams: count,
    failed: results.length - ok.length,
    errorDetail: countErrors(results),
    ttfbMs: summarize(ok.map((r) => r.ttfbMs)),
    totalMs: summarize(ok.map((r) => r.totalMs)),
    readsP50: median(ok.map((r) => r.reads)),
    eventsP50: median(ok.map((r) => r.events)),
  };
}

export interface ConcurrentStats {
  streams: number;
  completed: number;
  failed: number;
  errorDetail: Record<string, number>;
  durationS: number;
  /** The server's VmRSS just before the streams were opened. */
  rssBeforeMb: number;
  /** The largest VmRSS sampled (every `sampleMs`) while streams were open. */
  rssMaxMb: number;
  /** Most requests sent and not yet finished at one time (client side). */
  inFlightPeak: number;
  /** Most streams with response headers received and not yet finished at one time (client side). */
  streamingPeak: number;
}

/** Opens `count` streams at once and samples the server's (pid) resident memory until all have ended. */
export async function concurrentStreams(
  endpoint: StreamEndpoint,
  count: number,
  pid: number,
  sampleMs = 50,
): Promise<ConcurrentStats> {
  const pool = new Pool(new URL(endpoint.url).origin, {
    connections: count,
    pipelining: 1,
    headersTimeout: 300_000,
    bodyTimeout: 300_000,
  });
  const rssBeforeMb = readMemory(pid).rssMb;
  let rssMaxMb = rssBeforeMb;
  const sampler = setInterval(() => {
    try {
      rssMaxMb = Math.max(rssMaxMb, readMemory(pid).rssMb);
    } catch {
      // the process is gone: the streams will fail and say so
    }
  }, sampleMs);
  let inFlight = 0;
  let inFlightPeak = 0;
  let streaming = 0;
  let streamingPeak = 0;
  const started = performance.now();
  let results: OneStream[];
  try {
    results = await Promise.all(
      Array.from({ length: count }, async () => {
        inFlight++;
        inFlightPeak = Math.max(inFlightPeak, inFlight);
        let gotHeaders = false;
        const result = await readStream(pool, endpoint, () => {
          gotHeaders = true;
          streaming++;
          streamingPeak = Math.max(streamingPeak, streaming);
        });
        inFlight--;
        if (gotHeaders) streaming--;
        return result;
      }),
    );
  } finally {
    clearInterval(sampler);
    await pool.close();
  }
  const completed = results.filter((r) => r.ok).length;
  return {
    streams: count,
    completed,
    failed: count - completed,
    errorDetail: countErrors(results),
    durationS: (performance.now() - started) / 1000,
    rssBeforeMb,
    rssMaxMb,
    inFlightPeak,
    streamingPeak,
  };
}
