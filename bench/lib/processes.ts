/** Child processes of the benchmark: compiling and starting the servers, reading /proc, and cleaning up. */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export const BENCH_DIR = dirname(dirname(fileURLToPath(import.meta.url)));
export const ROOT = dirname(BENCH_DIR);

/** Clock ticks per second of /proc/<pid>/stat's utime and stime. */
export const CLK_TCK = (() => {
  try {
    const n = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    return Number.isInteger(n) && n > 0 ? n : 100;
  } catch {
    return 100;
  }
})();

export interface ProcSample {
  /** user + system CPU time of every thread of the process, in seconds. */
  cpuSeconds: number;
  rssMb: number;
  /** VmHWM: the peak resident set size so far. */
  peakRssMb: number;
}

export function readProc(pid: number): ProcSample {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may contain spaces) start with field 3, `state`; utime is 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return { cpuSeconds: ticks / CLK_TCK, ...readMemory(pid) };
}

export function readMemory(pid: number): { rssMb: number; peakRssMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rssMb: kb('VmRSS') / 1024, peakRssMb: kb('VmHWM') / 1024 };
}

/** Process ids of the processes whose name starts with `prefix` (`postgres`, `redis-server`) visible in /proc. */
export function pidsByName(prefix: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').startsWith(prefix)) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/** The PostgreSQL and Redis server processes on this machine: in the second configuration they work for tollgate. */
export function databasePids(): number[] {
  return [...pidsByName('postgres'), ...pidsByName('redis-server')];
}

/** How many established TCP connections process `pid` holds to `remotePort` (from its fds and /proc/net/tcp*). */
export function tcpConnections(pid: number, remotePort: number): number {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (match) inodes.add(match[1]!);
    } catch {
      // closed meanwhile
    }
  }
  let count = 0;
  for (const table of ['tcp', 'tcp6']) {
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/net/${table}`, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      // cols: sl local_address rem_address st ... inode (index 9); state 01 = ESTABLISHED
      if (cols.length < 10 || cols[3] !== '01') continue;
      const port = parseInt(cols[2]!.split(':')[1] ?? '', 16);
      if (port === remotePort && inodes.has(cols[9]!)) count++;
    }
  }
  return count;
}

/** Busy CPU seconds of the whole machine (all CPUs) since boot, from /proc/stat. */
function machineBusySeconds(): number {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is already inside user)
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = fields;
  return (user + nice + system + irq + softirq + steal) / CLK_TCK;
}

/** CPU seconds of this process plus its reaped children (wrk runs end up there once they have exited). */
function selfAndChildrenSeconds(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) / CLK_TCK;
}

/** CPU seconds of the kernel's own threads (children of kthreadd, pid 2): I/O flushing, workqueues. */
function kernelThreadSeconds(): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[1] === '2' || entry === '2') total += Number(fields[11]) + Number(fields[12]);
    } catch {
      // gone meanwhile
    }
  }
  return total / CLK_TCK;
}

/**
 * Measures how busy the rest of the machine was during a run: CPU used by processes that are not the benchmark's
 * (the runner, its load generator, the servers and the given database processes) nor kernel threads (which do
 * the benchmark's I/O, e.g. PostgreSQL's WAL flushes), in cores. A shared machine where builds or tests run
 * meanwhile shows up here, and such figures should not be trusted.
 *
 * `pids` is asked at both ends of the run: tollgate opens its PostgreSQL connections after the benchmark starts,
 * and each one's backend is a new process working for it, not other load.
 */
export function cpuWindow(pids: () => number[]): () => { otherCores: number } {
  const own = () => selfAndChildrenSeconds() + kernelThreadSeconds();
  const t0 = performance.now();
  const busy0 = machineBusySeconds();
  const own0 = own();
  const servers0 = cpuByPid(pids());
  return () => {
    const wall = (performance.now() - t0) / 1000;
    const servers = cpuUsedBetween(servers0, cpuByPid(pids()));
    const other = machineBusySeconds() - busy0 - (own() - own0) - servers;
    return { otherCores: Math.max(0, other / wall) };
  };
}

/** CPU seconds so far of each of `pids`; a process that has ended is left out. */
function cpuByPid(pids: Iterable<number>): Map<number, number> {
  const cpu = new Map<number, number>();
  for (const pid of pids) {
    try {
      cpu.set(pid, readProc(pid).cpuSeconds);
    } catch {
      // ended
    }
  }
  return cpu;
}

/**
 * CPU seconds the processes used between two readings. One that started in between counts from zero; one that
 * ended in between counts nothing (its last share is unknown, so it shows as other load).
 */
export function cpuUsedBetween(before: ReadonlyMap<number, number>, after: ReadonlyMap<number, number>): number {
  let used = 0;
  for (const [pid, seconds] of after) used += seconds - (before.get(pid) ?? 0);
  return used;
}

// ---------------------------------------------------------------------------------------------------------------
// Cleanup: every child and temporary directory is registered, and released on exit, error and signals.

const cleanups: Array<() => void | Promise<void>> = [];

/** Registers `fn` to run at cleanup; the returned function unregisters it. */
export function onCleanup(fn: () => void | Promise<void>): () => void {
  cleanups.push(fn);
  return () => {
    const index = cleanups.indexOf(fn);
    if (index !== -1) cleanups.splice(index, 1);
  };
}

export async function cleanupAll(): Promise<void> {
  while (cleanups.length) {
    const fn = cleanups.pop()!;
    try {
      await fn();
    } catch (error) {
      process.stderr.write(`bench: cleanup failed: ${error instanceof Error ? error.message : String(error)}\n`);
    }
  }
}

export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  onCleanup(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// ---------------------------------------------------------------------------------------------------------------

/** Compiles a self-contained server of bench/ to bench/.build/<name>.js (no tsx loader thread in its process). */
export function compileServer(name: string): string {
  const source = readFileSync(join(BENCH_DIR, `${name}.ts`), 'utf8');
  const { outputText } = ts.transpileModule(source, {
    fileName: `${name}.ts`,
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, sourceMap: false },
  });
  const out = join(BENCH_DIR, '.build', `${name}.js`);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, outputText);
  return out;
}

const crashes: string[] = [];

/** Reports of servers that exited while nobody was stopping them, each with its last output; clears the list. */
export function takeCrashes(): string[] {
  return crashes.splice(0);
}

export interface Server {
  name: string;
  pid: number;
  url: string;
  logFile: string;
  child: ChildProcess;
  /** The last lines of its output, for error messages. */
  tail(lines?: number): string;
  stop(): Promise<void>;
}

interface StartOptions {
  name: string;
  args: string[];
  env: Record<string, string>;
  cwd: string;
  logFile: string;
  /** Resolves the server's URL once it is ready; rejects (or times out) otherwise. */
  ready: (child: ChildProcess, log: () => string) => Promise<string>;
  timeoutMs?: number;
  ipc?: boolean;
}

/** A minimal environment: nothing of the caller's TOLLGATE_*, DATABASE_URL, *_API_KEY etc. leaks into a server. */
export function baseEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ['PATH', 'HOME', 'LANG', 'TZ']) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return env;
}

export async function startServer(options: StartOptions): Promise<Server> {
  const fd = openSync(options.logFile, 'a');
  const child = spawn(process.execPath, options.args, {
    cwd: options.cwd,
    env: options.env,
    stdio: ['ignore', fd, fd, ...(options.ipc ? (['ipc'] as const) : [])],
  });
  closeSync(fd);
  const log = () => {
    try {
      return readFileSync(options.logFile, 'utf8');
    } catch {
      return '';
    }
  };
  const tail = (lines = 15) => log().trimEnd().split('\n').slice(-lines).join('\n');
  let exited = false;
  let stopping = false;
  const exit = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.once('exit', (code, signal) => {
    exited = true;
    if (stopping) return;
    const last = tail(10)
      .split('\n')
      .map((line) => (line.length > 300 ? `${line.slice(0, 300)}…` : line))
      .join('\n');
    // tollgate prints this on SIGTERM/SIGINT: a signal from outside the benchmark (another process's clean-up).
    const outside = /(SIGTERM|SIGINT) received/.exec(last);
    const why = outside ? `, after a ${outside[1]} from outside the benchmark` : '';
    crashes.push(
      `${options.name} (pid ${child.pid}) exited unexpectedly (${signal ?? `code ${code}`}${why}); last output:\n${last}`,
    );
  });
  const stop = async () => {
    stopping = true;
    if (exited) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exit;
    clearTimeout(timer);
  };
  onCleanup(stop);
  if (child.pid === undefined) throw new Error(`${options.name}: could not start ${process.execPath}`);

  const timeoutMs = options.timeoutMs ?? 30_000;
  let url: string;
  try {
    url = await Promise.race([
      options.ready(child, log),
      exit.then(() => {
        throw new Error(`${options.name} exited with code ${child.exitCode} during start-up`);
      }),
      sleep(timeoutMs).then(() => {
        throw new Error(`${options.name} did not start within ${timeoutMs / 1000} s`);
      }),
    ]);
  } catch (error) {
    throw new Error(`${(error as Error).message}\n--- ${options.logFile} ---\n${tail()}`, { cause: error });
  }
  return { name: options.name, pid: child.pid, url, logFile: options.logFile, child, tail, stop };
}

/** `ready` for the bench's own servers: they send `{ port }` over IPC once listening. */
export function portMessage(child: ChildProcess): Promise<string> {
  return new Promise((resolve) => {
    child.once('message', (message) => resolve(`http://127.0.0.1:${(message as { port: number }).port}`));
  });
}

/** `ready` for tollgate: its start-up line `tollgate listening on <url> (storage: …)` in the log. */
export async function tollgateListening(child: ChildProcess, log: () => string): Promise<string> {
  while (child.exitCode === null && child.signalCode === null) {
    const match = /tollgate listening on (http:\/\/[^\s]+)/.exec(log());
    if (match) return match[1]!;
    await sleep(50);
  }
  throw new Error('tollgate exited during start-up');
}

/**
 * tollgate as the benchmark runs it: `dist/main.js` with the product's default log level (one JSON line per chat
 * request, to a file), one process, the mock as the OpenAI upstream; PostgreSQL + Redis when `backends` is given.
 * The mock is also Mistral's upstream: an OpenAI-compatible provider that does not serve the Responses API, so
 * that a Mistral model's `/v1/responses` (and `/v1/messages`) requests are translated through chat.
 */
export function startTollgate(options: {
  dir: string;
  upstream: string;
  adminToken: string;
  backends?: { databaseUrl: string; redisUrl: string };
  nodeArgs?: string[];
  /** node:cluster workers (PostgreSQL + Redis only); 1 by default. */
  workers?: number;
}): Promise<Server> {
  const { dir, backends } = options;
  return startServer({
    name: 'tollgate',
    args: [...(options.nodeArgs ?? []), join(ROOT, 'dist', 'main.js')],
    env: {
      ...baseEnv(),
      TOLLGATE_DATA_DIR: join(dir, 'data'),
      PORT: '0',
      HOST: '127.0.0.1',
      TOLLGATE_LOG_LEVEL: 'info',
      // The targets are for one tollgate process (no node:cluster workers) unless asked.
      TOLLGATE_WORKERS: String(options.workers ?? 1),
      TOLLGATE_ADMIN_TOKEN: options.adminToken,
      OPENAI_API_KEY: 'bench',
      OPENAI_BASE_URL: `${options.upstream}/v1`,
      MISTRAL_API_KEY: 'bench',
      MISTRAL_BASE_URL: `${options.upstream}/v1`,
      ...(backends ? { DATABASE_URL: backends.databaseUrl, REDIS_URL: backends.redisUrl } : {}),
    },
    cwd: dir,
    logFile: join(dir, options.workers ? `tollgate-${options.workers}-workers.log` : 'tollgate.log'),
    ready: tollgateListening,
    timeoutMs: 60_000,
  });
}

/** The process and its descendants (node:cluster workers), read from /proc. */
export function processTree(pid: number): number[] {
  let children: number[] = [];
  try {
    for (const task of readdirSync(`/proc/${pid}/task`)) {
      children = children.concat(
        readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number),
      );
    }
  } catch {
    return [pid];
  }
  return [pid, ...children.flatMap(processTree)];
}
