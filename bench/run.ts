/**
 * tollgate's benchmark: `npm run bench` (full, a few minutes) or `npm run bench -- --quick` (under a minute, CI).
 *
 * Starts on 127.0.0.1, each as its own process: a mock OpenAI upstream, a bare pass-through proxy (the baseline)
 * and tollgate (`node dist/main.js`) with a real account and key. Measures the three the same way (throughput at
 * 50 connections, latency at one connection, CPU per request and peak RSS from /proc, streaming time to first
 * chunk and total), then tollgate's CPU per chunk of chat streams and of the same streams translated to Anthropic
 * Messages and OpenAI Responses (bench/lib/translated.ts), then tollgate's memory with many streams open, in two
 * configurations: embedded defaults (SQLite) and PostgreSQL + Redis. Prints the tables and targets and writes
 * bench/results/latest.json.
 * Exits 1 when a request failed or a configuration could not run; a missed target is reported, not fatal.
 *
 * Options: --quick, --tool wrk|autocannon (default: wrk when installed), --only embedded|postgres.
 * Environment: TOLLGATE_BENCH_PG_URL (admin URL, default postgres://postgres@127.0.0.1:5432/test),
 * TOLLGATE_BENCH_REDIS_URL (default redis://127.0.0.1:6379).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, release, totalmem } from 'node:os';
import { join } from 'node:path';
import { request } from 'undici';
import {
  combineLoads,
  rotate,
  runLatency,
  runLoad,
  wrkInstalled,
  type Endpoint,
  type LoadResult,
  type Tool,
} from './lib/load.js';
import { measureLargeBodies } from './lib/large-bodies.js';
import { embeddingsBody, measureEmbeddings } from './lib/non-chat.js';
import {
  BENCH_DIR,
  CLK_TCK,
  ROOT,
  baseEnv,
  cleanupAll,
  compileServer,
  cpuWindow,
  databasePids,
  pidsByName,
  portMessage,
  readMemory,
  readProc,
  startServer,
  startTollgate,
  processTree,
  takeCrashes,
  tcpConnections,
  tempDir,
  type Server,
} from './lib/processes.js';
import { checks, printConfig, ratios, type ConfigResult, type TargetName } from './lib/report.js';
import { PG_ADMIN_URL, REDIS_URL, backendPids, createDatabase, prepareAccount, reachable } from './lib/setup.js';
import { concurrentStreams, sequentialStreams } from './lib/streams.js';
import { measureTranslated } from './lib/translated.js';

type ConfigName = 'embedded' | 'postgres';

interface Options {
  quick: boolean;
  tool: Tool;
  only: ConfigName | undefined;
}

const FULL = {
  warmupS: 3,
  throughputS: 10,
  /** The measured seconds are taken in this many slices, the targets in turn (see runConfiguration). */
  throughputSlices: 5,
  latencyS: 5,
  connections: 50,
  streamChunks: 50,
  streamDelayMs: 5,
  sequentialStreams: 30,
  streamWarmup: 2,
  concurrentStreams: 1000,
  concurrentChunks: 50,
  concurrentDelayMs: 100,
  translatedStreams: 200,
  translatedChunks: 200,
  translatedRounds: 5,
  translatedWarmup: 5,
};
/** Under a minute for both configurations together, build included (about 22 s each here). */
const QUICK: typeof FULL = {
  warmupS: 1,
  throughputS: 2,
  throughputSlices: 2,
  latencyS: 1,
  connections: 50,
  streamChunks: 50,
  streamDelayMs: 5,
  sequentialStreams: 5,
  streamWarmup: 1,
  concurrentStreams: 200,
  concurrentChunks: 10,
  concurrentDelayMs: 100,
  translatedStreams: 40,
  translatedChunks: 200,
  translatedRounds: 2,
  translatedWarmup: 2,
};
const CONCURRENT_TARGET = 1000;

const write = (line: string) => process.stdout.write(`${line}\n`);

function parseArgs(argv: string[]): Options {
  let quick = false;
  let tool: Tool | undefined;
  let only: ConfigName | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = () => {
      const v = arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : argv[++i];
      if (v === undefined) throw new Error(`${arg} needs a value`);
      return v;
    };
    if (arg === '--quick') quick = true;
    else if (arg === '--tool' || arg.startsWith('--tool=')) {
      const v = value();
      if (v !== 'wrk' && v !== 'autocannon') throw new Error(`--tool must be wrk or autocannon, got "${v}"`);
      tool = v;
    } else if (arg === '--only' || arg.startsWith('--only=')) {
      const v = value();
      if (v !== 'embedded' && v !== 'postgres') throw new Error(`--only must be embedded or postgres, got "${v}"`);
      only = v;
    } else if (arg === '--help' || arg === '-h') {
      write('npm run bench [-- --quick] [--tool wrk|autocannon] [--only embedded|postgres]');
      process.exit(0);
    } else throw new Error(`unknown option ${arg} (try --help)`);
  }
  const haveWrk = wrkInstalled();
  if (tool === 'wrk' && !haveWrk) throw new Error('--tool wrk: wrk is not installed (apt-get install wrk)');
  return { quick, tool: tool ?? (haveWrk ? 'wrk' : 'autocannon'), only };
}

function chatBody(model: string, stream: boolean): string {
  return JSON.stringify({
    model,
    messages: [{ role: 'user', content: 'Say hello in one short sentence.' }],
    max_tokens: 64,
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  });
}

async function post(url: string, body: unknown): Promise<void> {
  const res = await request(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  await res.body.text();
  if (res.statusCode !== 200) throw new Error(`POST ${url} answered ${res.statusCode}`);
}

async function mockStats(mock: Server): Promise<{ requests: number; streams_open: number; streams_open_peak: number }> {
  const res = await request(`${mock.url}/bench/stats`);
  return (await res.body.json()) as { requests: number; streams_open: number; streams_open_peak: number };
}

/** One request of each kind, so that a broken set-up fails fast with its answer rather than as a load figure. */
async function smokeTest(name: string, json: Endpoint, stream: Endpoint): Promise<void> {
  const headers = {
    'content-type': 'application/json',
    ...(json.auth ? { authorization: `Bearer ${json.auth}` } : {}),
  };
  const res = await request(json.url, { method: 'POST', headers, body: json.body });
  const text = await res.body.text();
  if (res.statusCode !== 200 || !text.includes('"choices"'))
    throw new Error(`${name}: a chat completion answered ${res.statusCode}: ${text.slice(0, 300)}`);
  const streamed = await request(stream.url, { method: 'POST', headers, body: stream.body });
  const events = await streamed.body.text();
  if (streamed.statusCode !== 200 || !events.endsWith('data: [DONE]\n\n')) {
    throw new Error(`${name}: a streamed completion answered ${streamed.statusCode}: ${events.slice(0, 300)}`);
  }
}

async function runConfiguration(
  name: ConfigName,
  settings: typeof FULL,
  options: Options,
  files: { mock: string; baseline: string; largeBodyClient: string },
): Promise<ConfigResult> {
  const result: ConfigResult = { name, targets: [], checks: [], failures: [] };
  const dir = tempDir(`tollgate-bench-${name}-`);
  let database: { url: string; name: string } | undefined;
  if (name === 'postgres') {
    database = await createDatabase();
    result.redis = {
      url: REDIS_URL,
      reachable: await reachable(REDIS_URL),
      mentionedInTollgateLog: false,
      tollgateConnections: 0,
    };
  }

  const mock = await startServer({
    name: 'mock upstream',
    args: [files.mock],
    env: { ...baseEnv(), MOCK_CHUNKS: String(settings.streamChunks), MOCK_DELAY_MS: '0' },
    cwd: dir,
    logFile: join(dir, 'mock.log'),
    ipc: true,
    ready: portMessage,
  });
  const baseline = await startServer({
    name: 'baseline proxy',
    args: [files.baseline],
    env: { ...baseEnv(), UPSTREAM: mock.url, UPSTREAM_KEY: 'bench' },
    cwd: dir,
    logFile: join(dir, 'baseline.log'),
    ipc: true,
    ready: portMessage,
  });
  const adminToken = randomBytes(24).toString('hex');
  const tollgate = await startTollgate({
    dir,
    upstream: mock.url,
    adminToken,
    ...(database ? { backends: { databaseUrl: database.url, redisUrl: REDIS_URL } } : {}),
  });
  const startup = readFileSync(tollgate.logFile, 'utf8');
  result.backends = /tollgate listening on \S+ \(([^)]*)\)/.exec(startup)?.[1] ?? '(start-up line not recognised)';
  if (result.redis) result.redis.mentionedInTollgateLog = /redis/i.test(startup);

  const account = await prepareAccount(tollgate.url, adminToken);
  result.model = account.model;
  const json = chatBody(account.model, false);
  const streamed = chatBody(account.model, true);
  const servers: Record<TargetName, { server: Server; json: Endpoint; stream: Endpoint }> = {
    direct: {
      server: mock,
      json: { url: `${mock.url}/v1/chat/completions`, body: json },
      stream: { url: `${mock.url}/v1/chat/completions`, body: streamed },
    },
    baseline: {
      server: baseline,
      json: { url: `${baseline.url}/v1/chat/completions`, body: json },
      stream: { url: `${baseline.url}/v1/chat/completions`, body: streamed },
    },
    tollgate: {
      server: tollgate,
      json: { url: `${tollgate.url}/v1/chat/completions`, body: json, auth: account.apiKey },
      stream: { url: `${tollgate.url}/v1/chat/completions`, body: streamed, auth: account.apiKey },
    },
  };
  const order: TargetName[] = ['direct', 'baseline', 'tollgate'];
  for (const target of order) await smokeTest(target, servers[target].json, servers[target].stream);
  // Whether tollgate uses Redis: its open connections to the Redis port once it has served requests.
  if (result.redis)
    result.redis.tollgateConnections = tcpConnections(tollgate.pid, Number(new URL(REDIS_URL).port || 6379));

  const noteErrors = (target: string, phase: string, load: { errors: number; errorDetail: Record<string, number> }) => {
    if (load.errors > 0)
      result.failures.push(`${target} ${phase}: ${load.errors} failed (${JSON.stringify(load.errorDetail)})`);
  };

  // Throughput at 50 connections: a warm-up each, then the measured seconds in slices taken in turn, each round in
  // a rotated order, so that a machine that speeds up or slows down during the run (seen here: the baseline at 4,500
  // and 7,700 req/s minutes apart) moves every target's figure alike and the ratios stay fair. Then latency.
  const warmups = new Map<TargetName, LoadResult>();
  for (const target of order) {
    process.stdout.write(`   ${name}/${target}: warm-up...`);
    const warmup = await runLoad(options.tool, servers[target].json, settings.connections, settings.warmupS);
    noteErrors(target, 'warm-up', warmup);
    process.stdout.write(` ${Math.round(warmup.rps)} req/s\n`);
    warmups.set(target, warmup);
  }
  const redisPids = database ? pidsByName('redis-server') : [];
  // With PostgreSQL + Redis, their processes (backends, WAL writer, redis-server) work for tollgate: not "other" load.
  // Looked up at both ends of each run: tollgate's pool opens (and closes) its backends as it goes.
  const benchPids = () => [mock.pid, baseline.pid, tollgate.pid, ...(database ? databasePids() : [])];
  const slices = new Map<
    TargetName,
    {
      loads: LoadResult[];
      cpu: number;
      upstream: number;
      pg: number | undefined;
      redis: number | undefined;
      other: number;
    }
  >();
  for (const target of order) slices.set(target, { loads: [], cpu: 0, upstream: 0, pg: 0, redis: 0, other: 0 });
  process.stdout.write(
    `   ${name}: throughput, ${settings.throughputSlices} slices of ${settings.throughputS / settings.throughputSlices} s each...`,
  );
  for (let round = 0; round < settings.throughputSlices; round++) {
    for (const target of rotate(order, round)) {
      const sums = slices.get(target)!;
      // tollgate's PostgreSQL backends, looked up again for each slice: its pool closes idle connections.
      const pgPids = database && target === 'tollgate' ? await backendPids(database.name) : [];
      const window = cpuWindow(benchPids);
      const before = {
        cpu: readProc(servers[target].server.pid).cpuSeconds,
        upstream: readProc(mock.pid).cpuSeconds,
        pg: cpuOf(pgPids),
        redis: cpuOf(redisPids),
      };
      const load = await runLoad(
        options.tool,
        servers[target].json,
        settings.connections,
        settings.throughputS / settings.throughputSlices,
      );
      sums.cpu += readProc(servers[target].server.pid).cpuSeconds - before.cpu;
      sums.upstream += readProc(mock.pid).cpuSeconds - before.upstream;
      if (target === 'tollgate') {
        sums.pg = addDelta(sums.pg, before.pg, cpuOf(pgPids));
        sums.redis = addDelta(sums.redis, before.redis, cpuOf(redisPids));
      }
      sums.other += window().otherCores * load.durationS;
      sums.loads.push(load);
    }
  }
  process.stdout.write(' done\n');
  const baselineRounds = slices.get('baseline')!.loads;
  result.throughputRounds = slices.get('tollgate')!.loads.map((load, i) => load.rps / baselineRounds[i]!.rps);
  for (const target of order) {
    const sums = slices.get(target)!;
    const throughput = combineLoads(sums.loads);
    noteErrors(target, 'throughput', throughput);
    const perK = (seconds: number) => (1000 * seconds) / Math.max(1, throughput.requests);
    process.stdout.write(`   ${name}/${target}: ${Math.round(throughput.rps)} req/s; latency...`);
    const latencyWindow = cpuWindow(benchPids);
    const latency = await runLatency(options.tool, servers[target].json, settings.latencyS);
    const latencyOther = latencyWindow().otherCores;
    noteErrors(target, 'latency', latency);
    process.stdout.write(` p50 ${latency.latencyMs.p50.toFixed(3)} ms\n`);
    result.targets.push({
      name: target,
      pid: servers[target].server.pid,
      warmup: warmups.get(target)!,
      throughput,
      cpuSPer1k: perK(sums.cpu),
      upstreamCpuSPer1k: perK(sums.upstream),
      ...(target === 'tollgate' && database && sums.pg !== undefined ? { databaseCpuSPer1k: perK(sums.pg) } : {}),
      ...(target === 'tollgate' && redisPids.length && sums.redis !== undefined
        ? { redisCpuSPer1k: perK(sums.redis) }
        : {}),
      latency,
      peakRssMb: NaN,
      otherCores: { throughput: sums.other / Math.max(1e-9, throughput.durationS), latency: latencyOther },
    });
  }

  // Streaming, one stream at a time: time to first chunk and total time.
  await post(`${mock.url}/bench/config`, { chunks: settings.streamChunks, delay_ms: settings.streamDelayMs });
  for (const target of order) {
    process.stdout.write(`   ${name}/${target}: ${settings.sequentialStreams} streams...`);
    const streamWindow = cpuWindow(benchPids);
    const stats = await sequentialStreams(servers[target].stream, settings.sequentialStreams, settings.streamWarmup);
    const streamOther = streamWindow().otherCores;
    if (stats.failed)
      result.failures.push(`${target} streaming: ${stats.failed} failed (${JSON.stringify(stats.errorDetail)})`);
    process.stdout.write(
      ` first chunk p50 ${stats.ttfbMs.p50.toFixed(2)} ms, total p50 ${stats.totalMs.p50.toFixed(1)} ms\n`,
    );
    const entry = result.targets.find((t) => t.name === target)!;
    entry.streaming = stats;
    entry.otherCores.streaming = streamOther;
  }
  for (const entry of result.targets) entry.peakRssMb = readMemory(entry.pid).peakRssMb;

  // tollgate's CPU per chunk of chat streams and of the same streams translated to Messages and Responses.
  await measureTranslated(
    result,
    settings,
    { tollgate, mock },
    { apiKey: account.apiKey, model: account.translatedModel },
    benchPids,
    (text) => process.stdout.write(text),
  );

  // Many streams open at once through tollgate; its resident memory is sampled while they are open.
  await post(`${mock.url}/bench/config`, { chunks: settings.concurrentChunks, delay_ms: settings.concurrentDelayMs });
  await post(`${mock.url}/bench/stats/reset`, {});
  process.stdout.write(`   ${name}/tollgate: ${settings.concurrentStreams} concurrent streams...`);
  const concurrent = await concurrentStreams(servers.tollgate.stream, settings.concurrentStreams, tollgate.pid);
  const upstream = await mockStats(mock);
  process.stdout.write(` max RSS ${concurrent.rssMaxMb.toFixed(1)} MB\n`);
  if (concurrent.failed)
    result.failures.push(
      `tollgate concurrent streams: ${concurrent.failed} failed (${JSON.stringify(concurrent.errorDetail)})`,
    );
  result.concurrent = {
    ...concurrent,
    upstreamOpenPeak: upstream.streams_open_peak,
    chunks: settings.concurrentChunks,
    delayMs: settings.concurrentDelayMs,
  };

  // The same for a metered endpoint other than chat, after chat's figures (its bigger answers raise peak RSS).
  const embeddings = embeddingsBody(account.embeddingModel);
  await measureEmbeddings(
    result,
    settings,
    options.tool,
    {
      direct: { url: `${mock.url}/v1/embeddings`, body: embeddings },
      baseline: { url: `${baseline.url}/v1/embeddings`, body: embeddings },
      tollgate: { url: `${tollgate.url}/v1/embeddings`, body: embeddings, auth: account.apiKey },
    },
    (text) => process.stdout.write(text),
  );

  // Ordinary traffic beside 3 MB bodies that cost the tokenizer seconds each: refused, then admitted (full run only).
  if (!options.quick)
    await measureLargeBodies(
      result,
      settings,
      options.tool,
      { url: tollgate.url, pid: tollgate.pid, adminToken, ordinary: servers.tollgate.json, model: account.model },
      files.largeBodyClient,
      (text) => process.stdout.write(text),
    );

  result.ratios = ratios(result);
  result.checks = checks(result, CONCURRENT_TARGET, settings.streamChunks);

  // A graceful stop (drains the committer) is part of tollgate's work; it must exit 0.
  await tollgate.stop();
  result.tollgateExitCode = tollgate.child.exitCode;
  if (tollgate.child.exitCode !== 0)
    result.failures.push(
      `tollgate exited with ${tollgate.child.exitCode ?? tollgate.child.signalCode} on SIGTERM:\n${tollgate.tail()}`,
    );
  const errorLines = readFileSync(tollgate.logFile, 'utf8')
    .split('\n')
    .filter((line) => line.includes('"level":50') || line.includes('"level":60'));
  if (errorLines.length)
    result.failures.push(`tollgate logged ${errorLines.length} errors, first: ${errorLines[0]!.slice(0, 400)}`);
  if (database)
    await measureWorkers(
      result,
      settings,
      options,
      { dir, upstream: mock.url, adminToken, backends: { databaseUrl: database.url, redisUrl: REDIS_URL } },
      json,
      account.apiKey,
      servers.baseline.json,
    );
  return result;
}

/**
 * TOLLGATE_WORKERS=<CPUs> (node:cluster, PostgreSQL + Redis): throughput at 50 connections, and the CPU of the
 * primary and its workers. Same account, same database. Its slices alternate with the baseline's, and the figure
 * compared with one process is each one's share of the baseline measured beside it: the one-process tollgate is
 * measured minutes earlier, and the machine's speed drifts over minutes.
 */
async function measureWorkers(
  result: ConfigResult,
  settings: typeof FULL,
  options: Options,
  start: Parameters<typeof startTollgate>[0],
  body: string,
  apiKey: string,
  baseline: Endpoint,
): Promise<void> {
  const workers = Math.max(2, availableParallelism());
  process.stdout.write(`   ${result.name}/tollgate with TOLLGATE_WORKERS=${workers}: throughput...`);
  const server = await startTollgate({ ...start, workers });
  try {
    const endpoint: Endpoint = { url: `${server.url}/v1/chat/completions`, body, auth: apiKey };
    const warmup = await runLoad(options.tool, endpoint, settings.connections, settings.warmupS);
    const pids = processTree(server.pid);
    const cpu = () => pids.reduce((sum, pid) => sum + readProc(pid).cpuSeconds, 0);
    const loads: LoadResult[] = [];
    const beside: LoadResult[] = [];
    let cpuSeconds = 0;
    for (let round = 0; round < settings.throughputSlices; round++) {
      for (const which of rotate(['workers', 'baseline'] as const, round)) {
        const before = cpu();
        const load = await runLoad(
          options.tool,
          which === 'workers' ? endpoint : baseline,
          settings.connections,
          settings.throughputS / settings.throughputSlices,
        );
        if (which === 'workers') {
          cpuSeconds += cpu() - before;
          loads.push(load);
        } else beside.push(load);
      }
    }
    const throughput = combineLoads(loads);
    const baselineRps = combineLoads(beside).rps;
    const cpuSPer1k = (1000 * cpuSeconds) / Math.max(1, throughput.requests);
    for (const [phase, load] of [
      ['warm-up', warmup],
      ['throughput', throughput],
    ] as const) {
      if (load.errors > 0)
        result.failures.push(
          `tollgate (${workers} workers) ${phase}: ${load.errors} failed (${JSON.stringify(load.errorDetail)})`,
        );
    }
    const one = result.targets.find((t) => t.name === 'tollgate')?.throughput.rps ?? NaN;
    const oneBaseline = result.targets.find((t) => t.name === 'baseline')?.throughput.rps ?? NaN;
    const overOneProcess = throughput.rps / baselineRps / (one / oneBaseline);
    result.workers = { workers, processes: pids.length, rps: throughput.rps, baselineRps, cpuSPer1k, overOneProcess };
    result.checks.push({
      name: `TOLLGATE_WORKERS=${workers}: throughput @50 over one process (each as a share of the baseline beside it)`,
      value: `${overOneProcess.toFixed(2)}x`,
      target: '> 1x (grows with cores)',
      status: overOneProcess > 1 ? 'PASS' : 'FAIL',
    });
    process.stdout.write(
      ` ${Math.round(throughput.rps)} req/s (baseline beside it: ${Math.round(baselineRps)} req/s)\n`,
    );
  } finally {
    await server.stop();
  }
}

/**
 * CPU seconds of the given processes (database servers), or undefined when /proc does not show them (another
 * host). A backend that has exited since counts nothing (a pool closes idle connections).
 */
function cpuOf(pids: number[]): number | undefined {
  if (!pids.length) return undefined;
  let seen = 0;
  let sum = 0;
  for (const pid of pids) {
    try {
      sum += readProc(pid).cpuSeconds;
      seen++;
    } catch {
      // gone
    }
  }
  return seen ? sum : undefined;
}

function addDelta(
  total: number | undefined,
  before: number | undefined,
  after: number | undefined,
): number | undefined {
  return total === undefined || before === undefined || after === undefined
    ? undefined
    : total + Math.max(0, after - before);
}

async function main(): Promise<number> {
  const options = parseArgs(process.argv.slice(2));
  const settings = options.quick ? QUICK : FULL;
  if (!existsSync(join(ROOT, 'dist', 'main.js')))
    throw new Error('dist/main.js is missing: run `npm run build` (npm run bench does)');
  const files = {
    mock: compileServer('mock-upstream'),
    baseline: compileServer('baseline-proxy'),
    largeBodyClient: compileServer('large-body-client'),
  };
  const machine = {
    nproc: availableParallelism(),
    cpu: cpus()[0]?.model ?? 'unknown',
    memory_gb: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    kernel: release(),
    clk_tck: CLK_TCK,
  };
  const started = new Date();
  write(`tollgate benchmark (${options.quick ? 'quick' : 'full'}) ${started.toISOString()}`);
  write(
    `   load: ${options.tool}${options.tool === 'wrk' ? ' (1 thread; latency @1 with wrk -c1 -t1)' : ' (latency @1 with a sequential undici client)'}`,
  );
  write(
    `   load average before the run: ${loadavg()
      .map((n) => n.toFixed(2))
      .join(' ')}`,
  );
  write(
    `   machine: ${machine.nproc} CPUs (${machine.cpu}), ${machine.memory_gb} GB, Node ${machine.node}, Linux ${machine.kernel}`,
  );
  write(
    `   runs: ${settings.warmupS} s warm-up + ${settings.throughputS} s at ${settings.connections} connections, ${settings.latencyS} s at 1 connection; ` +
      `${settings.sequentialStreams} streams of ${settings.streamChunks} chunks ${settings.streamDelayMs} ms apart; ` +
      `${settings.concurrentStreams} concurrent streams${settings.concurrentStreams < CONCURRENT_TARGET ? ` (quick: ${CONCURRENT_TARGET.toLocaleString('en-US')} in the full run)` : ''}; ` +
      `${settings.translatedStreams} streams of ${settings.translatedChunks} chunks for each of chat, Messages and Responses`,
  );

  const configs: ConfigName[] = options.only ? [options.only] : ['embedded', 'postgres'];
  const results: ConfigResult[] = [];
  for (const name of configs) {
    write(
      `\n-- ${name}${name === 'postgres' ? ` (PostgreSQL ${PG_ADMIN_URL.replace(/\/\/[^@]*@/, '//')}, Redis ${REDIS_URL})` : ' (SQLite in a temporary directory)'}`,
    );
    try {
      results.push(await runConfiguration(name, settings, options, files));
    } catch (error) {
      if (interrupted) return 130;
      process.stdout.write('\n');
      const message = [error instanceof Error ? (error.stack ?? error.message) : String(error), ...takeCrashes()].join(
        '\n',
      );
      results.push({ name, targets: [], checks: [], failures: [], error: message });
    } finally {
      await cleanupAll();
    }
    const crashes = takeCrashes();
    if (crashes.length) results.at(-1)!.failures.push(...crashes);
  }

  if (interrupted) return 130;
  for (const config of results) printConfig(config, write);
  const failed = results.some((c) => c.error || c.failures.length);
  const finished = new Date();
  const report = {
    date: started.toISOString(),
    duration_s: (finished.getTime() - started.getTime()) / 1000,
    mode: options.quick ? 'quick' : 'full',
    tool: options.tool,
    machine,
    settings,
    ok: !failed,
    configurations: results,
  };
  mkdirSync(join(BENCH_DIR, 'results'), { recursive: true });
  const out = join(BENCH_DIR, 'results', 'latest.json');
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  write('');
  write(`Results written to ${out} (${report.duration_s.toFixed(0)} s).`);
  if (failed)
    write(
      'FAILED: some requests failed or a configuration could not run (see above). Missed targets alone do not fail the run.',
    );
  return failed ? 1 : 0;
}

let interrupted = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (interrupted) return;
    interrupted = true;
    process.stderr.write(`\nbench: ${signal}, stopping the servers\n`);
    void cleanupAll().finally(() => process.exit(130));
  });
}

main().then(
  async (code) => {
    await cleanupAll();
    if (!interrupted) process.exit(code);
  },
  async (error: unknown) => {
    if (interrupted) return;
    process.stderr.write(`bench: ${error instanceof Error ? error.message : String(error)}\n`);
    await cleanupAll();
    process.exit(1);
  },
);
