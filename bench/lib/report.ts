/** The printed tables and the target checks. */
import type { LoadResult } from './load.js';
import type { ConcurrentStats, StreamStats } from './streams.js';
import type { TranslatedResult } from './translated.js';

export type TargetName = 'direct' | 'baseline' | 'tollgate';

export interface TargetResult {
  name: TargetName;
  pid: number;
  warmup: LoadResult;
  throughput: LoadResult;
  /** CPU seconds of this server's process per 1,000 requests of the throughput run (= CPU ms per request). */
  cpuSPer1k: number;
  /** The mock upstream's CPU seconds per 1,000 requests during this target's throughput run. */
  upstreamCpuSPer1k: number;
  /** PostgreSQL backends' CPU seconds per 1,000 requests (tollgate with PostgreSQL, when /proc shows them). */
  databaseCpuSPer1k?: number;
  /** redis-server's CPU seconds per 1,000 requests (tollgate with Redis, when /proc shows it). */
  redisCpuSPer1k?: number;
  latency: LoadResult;
  streaming?: StreamStats;
  /** VmHWM after the throughput, latency and sequential streaming runs (before the concurrent streams). */
  peakRssMb: number;
  /** CPU used meanwhile by processes outside the benchmark, in cores (see `cpuWindow`). */
  otherCores: { throughput: number; latency: number; streaming?: number };
}

export interface Check {
  name: string;
  value: string;
  target: string;
  status: 'PASS' | 'FAIL' | 'INFO';
}

export interface ConfigResult {
  name: string;
  /** What tollgate's start-up line reported, e.g. `storage: postgres`. */
  backends?: string;
  /** `tollgateConnections`: TCP connections tollgate held to Redis after its first requests (0: it does not use it). */
  redis?: { url: string; reachable: boolean; mentionedInTollgateLog: boolean; tollgateConnections: number };
  model?: string;
  targets: TargetResult[];
  /** POST /v1/embeddings (8 inputs per request): throughput at 50 connections and p50 latency at one. */
  embeddings?: Array<{ name: TargetName; rps: number; p50Ms: number }>;
  /** Ordinary chat throughput quiet and beside 3 MB bodies (bench/lib/large-bodies.ts), with /health's times. */
  largeBodies?: LargeBodiesResult;
  concurrent?: ConcurrentStats & { upstreamOpenPeak: number; chunks: number; delayMs: number };
  /** tollgate's CPU per chunk of chat streams and of the same streams translated to Messages and Responses. */
  translated?: TranslatedResult;
  ratios?: Record<string, number>;
  /** tollgate / baseline throughput of each round of slices (each round runs the targets back to back). */
  throughputRounds?: number[];
  checks: Check[];
  failures: string[];
  tollgateExitCode?: number | null;
  /** PostgreSQL + Redis: the same throughput run with TOLLGATE_WORKERS (processes: the primary and its workers). */
  workers?: {
    workers: number;
    processes: number;
    rps: number;
    baselineRps: number;
    cpuSPer1k: number;
    overOneProcess: number;
  };
  error?: string;
}

export interface LargeBodiesResult {
  quietRps: number;
  /** /health's answer times beside the quiet run's ordinary traffic alone. */
  quietHealthP99Ms: number;
  quietHealthMaxMs: number;
  /** Each of the two senders starts a body at most this often. */
  bodyPeriodMs: number;
  runs: Array<{
    from: string;
    rps: number;
    /** rps over the quiet run's. */
    ofQuiet: number;
    largeBodies: number;
    statuses: Record<string, number>;
    /** tollgate's CPU beyond the quiet run's per ordinary request, per large body answered. */
    cpuMsPerBody: number;
    healthP99Ms: number;
    healthMaxMs: number;
  }>;
}

/** Cores used by other processes during a run above which its figures are flagged. */
export const OTHER_LOAD_WARNING = 0.15;

const fmt = (n: number | undefined, digits = 2) => (n === undefined || Number.isNaN(n) ? '-' : n.toFixed(digits));
const int = (n: number) => Math.round(n).toLocaleString('en-US');

export function checks(config: ConfigResult, concurrentTarget: number, streamChunks: number): Check[] {
  const by = (name: TargetName) => config.targets.find((t) => t.name === name);
  const direct = by('direct');
  const baseline = by('baseline');
  const tollgate = by('tollgate');
  const out: Check[] = [];
  const check = (name: string, value: number, limit: number, unit: string, higherIsBetter = false) => {
    const pass = higherIsBetter ? value >= limit : value <= limit;
    out.push({
      name,
      value: `${fmt(value)} ${unit}`,
      target: `${higherIsBetter ? '>=' : '<='} ${limit} ${unit}`,
      status: Number.isNaN(value) ? 'FAIL' : pass ? 'PASS' : 'FAIL',
    });
  };
  for (const run of config.largeBodies?.runs ?? []) {
    check(`/health max beside 3 MB bodies from a ${run.from}`, run.healthMaxMs, 50, 'ms');
    check(`ordinary throughput beside 3 MB bodies from a ${run.from}, of quiet`, 100 * run.ofQuiet, 80, '%', true);
  }
  if (!direct || !baseline || !tollgate) return out;
  check(
    'throughput @50, tollgate / baseline',
    (100 * tollgate.throughput.rps) / baseline.throughput.rps,
    50,
    '%',
    true,
  );
  check(
    'added latency @1 p50 (tollgate - direct)',
    tollgate.latency.latencyMs.p50 - direct.latency.latencyMs.p50,
    0.3,
    'ms',
  );
  check(
    'added latency @1 p99 (tollgate - direct)',
    tollgate.latency.latencyMs.p99 - direct.latency.latencyMs.p99,
    2,
    'ms',
  );
  const ts = tollgate.streaming;
  const ds = direct.streaming;
  if (ts && ds) {
    check('stream: added time to first chunk p50', ts.ttfbMs.p50 - ds.ttfbMs.p50, 1, 'ms');
    const relayed = ts.readsP50 >= streamChunks && ts.ttfbMs.p50 < ts.totalMs.p50 / 10;
    out.push({
      name: 'stream: chunks forwarded as they arrive',
      value: `${fmt(ts.readsP50, 0)} reads/stream, first chunk at ${fmt(ts.ttfbMs.p50)} of ${fmt(ts.totalMs.p50, 1)} ms`,
      target: `>= ${streamChunks} reads, first << total`,
      status: relayed ? 'PASS' : 'FAIL',
    });
    out.push({
      name: 'stream: added total time p50',
      value: `${fmt(ts.totalMs.p50 - ds.totalMs.p50)} ms`,
      target: '(reported)',
      status: 'INFO',
    });
  }
  const c = config.concurrent;
  if (c) {
    const name = `${int(c.streams)} concurrent open streams: max RSS`;
    if (c.streams >= concurrentTarget) check(name, c.rssMaxMb, 300, 'MB');
    else
      out.push({
        name: `${name} (quick run: not the 1,000 of the target)`,
        value: `${fmt(c.rssMaxMb, 1)} MB`,
        target: '<= 300 MB at 1,000',
        status: 'INFO',
      });
  }
  return out;
}

export function ratios(config: ConfigResult): Record<string, number> {
  const by = (name: TargetName) => config.targets.find((t) => t.name === name)!;
  const [direct, baseline, tollgate] = [by('direct'), by('baseline'), by('tollgate')];
  const out: Record<string, number> = {
    throughput_tollgate_over_baseline: tollgate.throughput.rps / baseline.throughput.rps,
    cpu_per_request_tollgate_over_baseline: tollgate.cpuSPer1k / baseline.cpuSPer1k,
    peak_rss_tollgate_over_baseline: tollgate.peakRssMb / baseline.peakRssMb,
    added_latency_p50_ms: tollgate.latency.latencyMs.p50 - direct.latency.latencyMs.p50,
    added_latency_p99_ms: tollgate.latency.latencyMs.p99 - direct.latency.latencyMs.p99,
    baseline_added_latency_p50_ms: baseline.latency.latencyMs.p50 - direct.latency.latencyMs.p50,
    baseline_added_latency_p99_ms: baseline.latency.latencyMs.p99 - direct.latency.latencyMs.p99,
  };
  if (tollgate.streaming && direct.streaming && baseline.streaming) {
    out.stream_added_ttfb_p50_ms = tollgate.streaming.ttfbMs.p50 - direct.streaming.ttfbMs.p50;
    out.stream_added_total_p50_ms = tollgate.streaming.totalMs.p50 - direct.streaming.totalMs.p50;
    out.baseline_stream_added_ttfb_p50_ms = baseline.streaming.ttfbMs.p50 - direct.streaming.ttfbMs.p50;
    out.baseline_stream_added_total_p50_ms = baseline.streaming.totalMs.p50 - direct.streaming.totalMs.p50;
  }
  for (const kind of config.translated?.kinds ?? []) {
    out[`translated_${kind.kind}_cpu_us_per_chunk`] = kind.usPerChunk;
    if (kind.kind !== 'chat') out[`translated_${kind.kind}_cpu_per_chunk_over_chat`] = kind.overChat;
  }
  return out;
}

function pad(cells: string[], widths: number[]): string {
  return cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
}

export function printConfig(config: ConfigResult, write: (line: string) => void): void {
  write('');
  write(
    `== ${config.name}${config.backends ? ` (tollgate ${config.backends})` : ''}${config.model ? `, model ${config.model}` : ''}`,
  );
  if (config.redis) {
    const r = config.redis;
    write(
      `   REDIS_URL=${r.url} passed (${r.reachable ? 'reachable' : 'NOT reachable'}); tollgate holds ${r.tollgateConnections} connection(s) to Redis${r.mentionedInTollgateLog ? ' and mentions it in its start-up output' : ''}`,
    );
  }
  if (config.error) {
    write(`   ERROR: ${config.error}`);
    return;
  }
  const head = [
    '',
    'req/s @50',
    'p50 @1 ms',
    'p99 @1 ms',
    'CPU s/1k req',
    'peak RSS MB',
    'TTFB p50 ms',
    'stream p50 ms',
    'reads/stream',
  ];
  const widths = [10, 10, 10, 10, 13, 12, 12, 14, 13];
  write(pad(head, widths));
  for (const t of config.targets) {
    write(
      pad(
        [
          t.name,
          int(t.throughput.rps),
          fmt(t.latency.latencyMs.p50, 3),
          fmt(t.latency.latencyMs.p99, 3),
          fmt(t.cpuSPer1k, 3),
          fmt(t.peakRssMb, 1),
          fmt(t.streaming?.ttfbMs.p50, 2),
          fmt(t.streaming?.totalMs.p50, 1),
          fmt(t.streaming?.readsP50, 0),
        ],
        widths,
      ),
    );
  }
  const tollgate = config.targets.find((t) => t.name === 'tollgate');
  const baseline = config.targets.find((t) => t.name === 'baseline');
  if (tollgate && baseline) {
    const notes = [`upstream (mock) CPU s/1k during the tollgate run: ${fmt(tollgate.upstreamCpuSPer1k, 3)}`];
    if (tollgate.databaseCpuSPer1k !== undefined)
      notes.push(`PostgreSQL backends: ${fmt(tollgate.databaseCpuSPer1k, 3)}`);
    if (tollgate.redisCpuSPer1k !== undefined) notes.push(`redis-server: ${fmt(tollgate.redisCpuSPer1k, 3)}`);
    write(`   ${notes.join('; ')}`);
  }
  if (config.ratios) {
    const r = config.ratios;
    const rounds = config.throughputRounds?.length
      ? ` (rounds of slices: ${config.throughputRounds.map((x) => fmt(100 * x, 1)).join(', ')} %)`
      : '';
    write(
      `   tollgate / baseline: throughput ${fmt(100 * r.throughput_tollgate_over_baseline!, 1)} %${rounds}, CPU per request ${fmt(r.cpu_per_request_tollgate_over_baseline, 2)}x, peak RSS ${fmt(r.peak_rss_tollgate_over_baseline, 2)}x`,
    );
    write(
      `   added over direct @1: tollgate p50 ${fmt(r.added_latency_p50_ms, 3)} ms, p99 ${fmt(r.added_latency_p99_ms, 3)} ms; baseline p50 ${fmt(r.baseline_added_latency_p50_ms, 3)} ms, p99 ${fmt(r.baseline_added_latency_p99_ms, 3)} ms`,
    );
    if (r.stream_added_ttfb_p50_ms !== undefined) {
      write(
        `   stream added over direct (p50): tollgate first chunk ${fmt(r.stream_added_ttfb_p50_ms, 3)} ms, total ${fmt(r.stream_added_total_p50_ms, 2)} ms; baseline ${fmt(r.baseline_stream_added_ttfb_p50_ms, 3)} / ${fmt(r.baseline_stream_added_total_p50_ms, 2)} ms`,
      );
    }
  }
  const e = config.embeddings;
  if (e?.length) {
    const of = (name: TargetName) => e.find((t) => t.name === name);
    const cells = e.map((t) => `${t.name} ${int(t.rps)} req/s, p50 ${fmt(t.p50Ms, 3)} ms`);
    const share = (of('tollgate')?.rps ?? NaN) / (of('baseline')?.rps ?? NaN);
    write(`   POST /v1/embeddings (8 inputs): ${cells.join('; ')}; tollgate / baseline ${fmt(100 * share, 1)} %`);
  }
  const large = config.largeBodies;
  if (large) {
    write(
      `   ordinary chat quiet: ${int(large.quietRps)} req/s, /health p99 ${fmt(large.quietHealthP99Ms, 1)} ms, max ${fmt(large.quietHealthMaxMs, 1)} ms; 3 MB bodies: two senders, one each ${large.bodyPeriodMs} ms at most`,
    );
    for (const run of large.runs)
      write(
        `   beside 3 MB bodies from a ${run.from} (${run.largeBodies} answered: ${JSON.stringify(run.statuses)}): ${int(run.rps)} req/s, ${fmt(100 * run.ofQuiet, 1)} % of quiet; tollgate CPU ${fmt(run.cpuMsPerBody, 1)} ms per body; /health p99 ${fmt(run.healthP99Ms, 1)} ms, max ${fmt(run.healthMaxMs, 1)} ms`,
      );
  }
  const c = config.concurrent;
  if (c) {
    write(
      `   ${int(c.streams)} concurrent streams (${c.chunks} chunks ${c.delayMs} ms apart): ${int(c.completed)} completed in ${fmt(c.durationS, 1)} s; tollgate RSS ${fmt(c.rssBeforeMb, 1)} MB before, max ${fmt(c.rssMaxMb, 1)} MB while open; at most ${int(c.upstreamOpenPeak)} open at the upstream, ${int(c.streamingPeak)} streaming to the client`,
    );
  }
  const tr = config.translated;
  if (tr) {
    const cells = tr.kinds.map(
      (k) =>
        `${k.kind} ${fmt(k.usPerChunk, 2)} µs${k.kind === 'chat' ? '' : ` (${fmt(k.overChat, 2)}x chat)`}` +
        ` [rounds ${fmt(Math.min(...k.roundsUsPerChunk), 1)}-${fmt(Math.max(...k.roundsUsPerChunk), 1)}]` +
        `${k.failed ? `, ${k.failed} FAILED` : ''}`,
    );
    const upstream = tr.kinds.map((k) => fmt(k.upstreamUsPerChunk, 2)).join(' / ');
    write(
      `   translated streams (${tr.model}, ${int(tr.streams)} of each kind x ${tr.chunks} chunks, one at a time, ${tr.rounds} rounds): tollgate CPU per chunk: ${cells.join('; ')}; upstream (mock) ${upstream} µs`,
    );
  }
  const disturbed = config.targets.flatMap((t) =>
    Object.entries(t.otherCores)
      .filter(([, cores]) => cores !== undefined && cores > OTHER_LOAD_WARNING)
      .map(([phase, cores]) => `${t.name} ${phase} ${fmt(cores, 2)}`),
  );
  if (tr && tr.otherCores > OTHER_LOAD_WARNING) disturbed.push(`tollgate translated streams ${fmt(tr.otherCores, 2)}`);
  if (disturbed.length) {
    write(
      `   WARNING: other processes were busy during some runs (CPU cores used outside the benchmark): ${disturbed.join(', ')}; those figures are unreliable.`,
    );
  }
  const w = config.workers;
  if (w) {
    write(
      `   TOLLGATE_WORKERS=${w.workers} (${w.processes} processes): ${int(w.rps)} req/s @50 (the baseline beside it: ${int(w.baselineRps)}) = ${fmt(w.overOneProcess, 2)}x one process, each as a share of its baseline; CPU ${fmt(w.cpuSPer1k, 3)} s/1k req over all of them`,
    );
  }
  for (const check of config.checks)
    write(`   [${check.status}] ${check.name}: ${check.value} (target ${check.target})`);
  for (const failure of config.failures) write(`   FAILED REQUESTS: ${failure}`);
}
