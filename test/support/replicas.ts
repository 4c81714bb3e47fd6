/**
 * Several real gateway processes (`node dist/main.js`, the file `npm start` runs) on one fresh PostgreSQL
 * database and one Redis key prefix, as operators run replicas behind a load balancer. dist/ must be built
 * (`npm test`'s pretest does it; otherwise `npm run build`).
 *
 * Every process this module starts is killed by `stop()`, and also when the test process exits, so a failed
 * test never leaves gateways behind.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { createTestDatabase, type TestDatabase } from './databases.js';
import { adminCall } from './admin-call.js';
import { deleteRedisKeys, REDIS_TEST_URL } from './redis.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const MAIN = join(ROOT, 'dist', 'main.js');
/** Start-up takes about 1 s; the wait only guards against a hang, with room for a machine busy compiling. */
const START_TIMEOUT_MS = 40_000;
const STOP_GRACE_MS = 5_000;
const OUTPUT_LIMIT = 256 * 1024;

export interface ReplicaOptions {
  /** Extra environment for every replica (added after the harness's own variables, so it can override them). */
  env?: Record<string, string>;
  /** Default `warn`. */
  logLevel?: string;
  /** Start the replicas one after another instead of all at once (default false: they race, as in production). */
  sequential?: boolean;
}

export interface Replicas {
  /** Base URLs without `/v1`, e.g. `http://127.0.0.1:41234`. */
  urls: string[];
  adminToken: string;
  database: TestDatabase;
  redisPrefix: string;
  /** Sends `signal` (default SIGKILL) to replica i and resolves when it has exited. */
  kill(i: number, signal?: NodeJS.Signals): Promise<void>;
  /** Starts replica i again on the same port; resolves once it prints "listening on". */
  restart(i: number): Promise<void>;
  /** Whether replica i is running. */
  alive(i: number): boolean;
  /** Everything replica i wrote on stdout and stderr (all its runs, most recent last; capped). */
  output(i: number): string;
  /** Every replica's output, labelled, for a failure message. */
  outputs(): string;
  /** An admin API call through replica i (default 0). */
  admin(method: string, path: string, body?: unknown, i?: number): Promise<{ status: number; body: any }>;
  /** Kills every replica (SIGTERM, SIGKILL after 5 s), drops the database and deletes the Redis keys. Idempotent. */
  stop(): Promise<void>;
}

interface Slot {
  port: number;
  dataDir: string;
  child: ChildProcess | undefined;
  exited: Promise<void>;
  text: string;
}

const everyChild = new Set<ChildProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const child of everyChild) {
      try {
        child.kill('SIGKILL');
      } catch {
        // already gone
      }
    }
  });
}

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

export async function startReplicas(n: number, options: ReplicaOptions = {}): Promise<Replicas> {
  installExitHook();
  const database = await createTestDatabase('postgres');
  const redisPrefix = `tgtest:${randomBytes(6).toString('hex')}:`;
  const adminToken = `tgtest-admin-${randomBytes(12).toString('hex')}`;
  const slots: Slot[] = [];
  for (let i = 0; i < n; i++) {
    const dataDir = join(database.dataDir, `replica-${i}`);
    mkdirSync(dataDir, { recursive: true });
    slots.push({ port: await freePort(), dataDir, child: undefined, exited: Promise.resolve(), text: '' });
  }

  const envFor = (slot: Slot): Record<string, string> => ({
    PATH: process.env.PATH ?? '',
    HOST: '127.0.0.1',
    PORT: String(slot.port),
    TOLLGATE_DATA_DIR: slot.dataDir,
    DATABASE_URL: database.databaseUrl!,
    REDIS_URL: REDIS_TEST_URL,
    TOLLGATE_REDIS_PREFIX: redisPrefix,
    TOLLGATE_ADMIN_TOKEN: adminToken,
    TOLLGATE_LOG_LEVEL: options.logLevel ?? 'warn',
    ...options.env,
  });

  const append = (slot: Slot, chunk: string) => {
    slot.text += chunk;
    if (slot.text.length > OUTPUT_LIMIT) slot.text = slot.text.slice(-OUTPUT_LIMIT);
  };

  const launch = async (i: number): Promise<void> => {
    const slot = slots[i]!;
    if (slot.child) throw new Error(`replica ${i} is already running`);
    const child = spawn(process.execPath, [MAIN], { cwd: ROOT, env: envFor(slot), stdio: ['ignore', 'pipe', 'pipe'] });
    everyChild.add(child);
    slot.child = child;
    append(slot, `--- start (pid ${child.pid}) at ${new Date().toISOString()}\n`);
    // "listening on" is looked for in this run's own stdout, so an earlier run's line never counts.
    let stdout = '';
    let listening = false;
    child.stdout.on('data', (d: Buffer) => {
      const text = d.toString();
      append(slot, text);
      if (!listening) {
        stdout = (stdout + text).slice(-4096);
        listening = /listening on/.test(stdout);
      }
    });
    child.stderr.on('data', (d: Buffer) => append(slot, d.toString()));
    let exitCode: string | undefined;
    child.once('error', (error) => append(slot, `--- spawn error: ${error.message}\n`));
    slot.exited = new Promise<void>((done) => {
      child.once('exit', (code, signal) => {
        exitCode = `${code ?? signal}`;
        append(slot, `--- exit (${exitCode}) at ${new Date().toISOString()}\n`);
        everyChild.delete(child);
        if (slot.child === child) slot.child = undefined;
        done();
      });
    });
    const until = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      if (listening) return;
      if (exitCode !== undefined)
        throw new Error(`replica ${i} exited (${exitCode}) before listening; output:\n${slot.text}`);
      if (Date.now() > until) {
        child.kill('SIGKILL');
        await slot.exited;
        throw new Error(
          `replica ${i} did not print "listening on" within ${START_TIMEOUT_MS} ms; output:\n${slot.text}`,
        );
      }
      await sleep(25);
    }
  };

  const kill = async (i: number, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> => {
    const slot = slots[i]!;
    const child = slot.child;
    if (!child) return;
    child.kill(signal);
    await slot.exited;
  };

  const terminate = async (slot: Slot): Promise<void> => {
    const child = slot.child;
    if (!child) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    await slot.exited;
    clearTimeout(timer);
  };

  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopped ??= (async () => {
      await Promise.all(slots.map(terminate));
      const failures: unknown[] = [];
      await database.drop().catch((error: unknown) => failures.push(error));
      await deleteRedisKeys(redisPrefix).catch((error: unknown) => failures.push(error));
      if (failures.length) throw new AggregateError(failures, 'replica clean-up failed');
    })();
    return stopped;
  };

  try {
    if (options.sequential) for (let i = 0; i < n; i++) await launch(i);
    else {
      const results = await Promise.allSettled(slots.map((_, i) => launch(i)));
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
    }
  } catch (error) {
    await stop().catch(() => undefined);
    throw error;
  }

  const urls = slots.map((slot) => `http://127.0.0.1:${slot.port}`);
  return {
    urls,
    adminToken,
    database,
    redisPrefix,
    kill,
    restart: (i) => launch(i),
    alive: (i) => slots[i]!.child !== undefined,
    output: (i) => slots[i]!.text,
    outputs: () => slots.map((slot, i) => `===== replica ${i} (port ${slot.port}) =====\n${slot.text}`).join('\n'),
    admin: (method, path, body, i = 0) => adminCall(urls[i]!, adminToken, method, path, body),
    stop,
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
