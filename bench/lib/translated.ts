/**
 * Translated streams: tollgate's CPU per chunk of a stream it relays as chat (the reference) and of the same
 * stream translated from chat into Anthropic's Messages events (`POST /v1/messages`) and OpenAI's Responses
 * events (`POST /v1/responses`). The model is one whose provider speaks chat only (see `translatedModel` in
 * setup.ts), so that both are translated rather than passed through.
 *
 * The mock sends `chunks` content chunks per stream with no delay; each kind's streams run one at a time on one
 * keep-alive connection, in rounds that take the kinds in a rotated order (a machine that speeds up or slows
 * down moves every kind alike). tollgate's CPU time (/proc, user + system) is read around each kind's slice;
 * the figure is CPU / (streams x chunks), so it includes each request's own work (authentication, admission,
 * settlement, its log line) spread over its chunks.
 */
import { request } from 'undici';
import { rotate } from './load.js';
import { cpuWindow, readProc } from './processes.js';
import type { ConfigResult } from './report.js';
import { sequentialStreams, type StreamEndpoint } from './streams.js';

export type TranslatedKind = 'chat' | 'messages' | 'responses';

export interface TranslatedSettings {
  /** Measured streams of each kind. */
  translatedStreams: number;
  /** Content chunks per stream (the mock's `chunks`). */
  translatedChunks: number;
  /** The measured streams are taken in this many rounds, the kinds in turn. */
  translatedRounds: number;
  /** Uncounted streams of each kind before the measured ones. */
  translatedWarmup: number;
}

export interface TranslatedKindResult {
  kind: TranslatedKind;
  path: string;
  streams: number;
  failed: number;
  errorDetail: Record<string, number>;
  /** tollgate's CPU seconds over this kind's measured streams. */
  cpuSeconds: number;
  /** tollgate's CPU microseconds per chunk: cpuSeconds / (streams x chunks). */
  usPerChunk: number;
  /** usPerChunk over chat's. */
  overChat: number;
  /** The mock upstream's CPU microseconds per chunk meanwhile (the same work for every kind). */
  upstreamUsPerChunk: number;
  /** Wall-clock seconds of the measured streams. */
  wallS: number;
  /** usPerChunk of each round alone, in order (their spread shows the noise). */
  roundsUsPerChunk: number[];
}

export interface TranslatedResult {
  model: string;
  streams: number;
  chunks: number;
  rounds: number;
  kinds: TranslatedKindResult[];
  /** CPU used by processes outside the benchmark during the measured streams, in cores (see `cpuWindow`). */
  otherCores: number;
}

const PROMPT = 'Say hello in one short sentence.';
/** Above the mock's chunk count (one token each): a bound below it would be billed at the bound and logged. */
const MAX_TOKENS = 4096;

/** The three kinds' requests for `model` on the tollgate at `base`, with the key `apiKey`. */
export function translatedEndpoints(
  base: string,
  apiKey: string,
  model: string,
): Record<TranslatedKind, StreamEndpoint> {
  const user = [{ role: 'user', content: PROMPT }];
  return {
    chat: {
      url: `${base}/v1/chat/completions`,
      auth: apiKey,
      body: JSON.stringify({
        model,
        max_tokens: MAX_TOKENS,
        stream: true,
        stream_options: { include_usage: true },
        messages: user,
      }),
    },
    messages: {
      url: `${base}/v1/messages`,
      headers: { 'x-api-key': apiKey, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model, max_tokens: MAX_TOKENS, stream: true, messages: user }),
      endEvent: 'message_stop',
    },
    responses: {
      url: `${base}/v1/responses`,
      auth: apiKey,
      body: JSON.stringify({ model, max_output_tokens: MAX_TOKENS, stream: true, input: PROMPT }),
      endEvent: 'response.completed',
    },
  };
}

async function configureMock(mockUrl: string, chunks: number): Promise<void> {
  const res = await request(`${mockUrl}/bench/config`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ chunks, delay_ms: 0 }),
  });
  await res.body.text();
  if (res.statusCode !== 200) throw new Error(`POST ${mockUrl}/bench/config answered ${res.statusCode}`);
}

/**
 * Runs the phase against tollgate (`pid`) and stores it in `result.translated`; failed streams go to
 * `result.failures`. Leaves the mock at `chunks` chunks with no delay.
 */
export async function measureTranslated(
  result: ConfigResult,
  settings: TranslatedSettings,
  servers: { tollgate: { url: string; pid: number }; mock: { url: string; pid: number } },
  account: { apiKey: string; model: string },
  /** The benchmark's own processes, for `cpuWindow`. */
  benchPids: () => number[],
  write: (text: string) => void,
): Promise<void> {
  const { translatedStreams: streams, translatedChunks: chunks, translatedWarmup: warmup } = settings;
  const rounds = Math.max(1, Math.min(settings.translatedRounds, streams));
  const endpoints = translatedEndpoints(servers.tollgate.url, account.apiKey, account.model);
  const kinds: TranslatedKind[] = ['chat', 'messages', 'responses'];
  await configureMock(servers.mock.url, chunks);
  write(`   ${result.name}/tollgate: translated streams, ${streams} of each kind x ${chunks} chunks...`);

  const noteFailures = (kind: TranslatedKind, phase: string, stats: { failed: number; errorDetail: object }) => {
    if (stats.failed)
      result.failures.push(
        `tollgate translated streams (${kind}) ${phase}: ${stats.failed} failed (${JSON.stringify(stats.errorDetail)})`,
      );
  };
  for (const kind of kinds) {
    if (warmup > 0) noteFailures(kind, 'warm-up', await sequentialStreams(endpoints[kind], warmup, 0));
  }

  interface Sum {
    streams: number;
    failed: number;
    errorDetail: Record<string, number>;
    cpu: number;
    upstream: number;
    wall: number;
    rounds: number[];
  }
  const sums = new Map<TranslatedKind, Sum>(
    kinds.map((kind) => [kind, { streams: 0, failed: 0, errorDetail: {}, cpu: 0, upstream: 0, wall: 0, rounds: [] }]),
  );
  const window = cpuWindow(benchPids);
  for (let round = 0; round < rounds; round++) {
    // The streams split as evenly as they go: the first rounds take one more when they do not divide.
    const count = Math.floor(streams / rounds) + (round < streams % rounds ? 1 : 0);
    for (const kind of rotate(kinds, round)) {
      const sum = sums.get(kind)!;
      const cpu0 = readProc(servers.tollgate.pid).cpuSeconds;
      const upstream0 = readProc(servers.mock.pid).cpuSeconds;
      const t0 = performance.now();
      const stats = await sequentialStreams(endpoints[kind], count, 0);
      sum.wall += (performance.now() - t0) / 1000;
      const cpu = readProc(servers.tollgate.pid).cpuSeconds - cpu0;
      sum.cpu += cpu;
      sum.rounds.push((1e6 * cpu) / Math.max(1, count * chunks));
      sum.upstream += readProc(servers.mock.pid).cpuSeconds - upstream0;
      sum.streams += count;
      sum.failed += stats.failed;
      for (const [error, n] of Object.entries(stats.errorDetail))
        sum.errorDetail[error] = (sum.errorDetail[error] ?? 0) + n;
    }
  }
  const otherCores = window().otherCores;

  const perChunk = (seconds: number, n: number) => (1e6 * seconds) / Math.max(1, n * chunks);
  const chat = sums.get('chat')!;
  const chatUs = perChunk(chat.cpu, chat.streams);
  const out: TranslatedKindResult[] = kinds.map((kind) => {
    const sum = sums.get(kind)!;
    noteFailures(kind, 'measured', sum);
    const usPerChunk = perChunk(sum.cpu, sum.streams);
    return {
      kind,
      path: new URL(endpoints[kind].url).pathname,
      streams: sum.streams,
      failed: sum.failed,
      errorDetail: sum.errorDetail,
      cpuSeconds: sum.cpu,
      usPerChunk,
      overChat: usPerChunk / chatUs,
      upstreamUsPerChunk: perChunk(sum.upstream, sum.streams),
      wallS: sum.wall,
      roundsUsPerChunk: sum.rounds,
    };
  });
  result.translated = { model: account.model, streams, chunks, rounds, kinds: out, otherCores };
  write(` ${out.map((k) => `${k.kind} ${k.usPerChunk.toFixed(1)} µs/chunk`).join(', ')}\n`);
}
