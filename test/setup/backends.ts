/**
 * Vitest global setup: probes the PostgreSQL and Redis the tests use, once per run, and provides which answered
 * (`inject('backends')`, see test/support/backends.ts). A missing one skips the suites that need it, with one line
 * saying why; in CI (CI set) it fails the run instead, since CI runs every suite.
 */
import pg from 'pg';
import { Redis } from 'ioredis';
import type { TestProject } from 'vitest/node';
import { PG_ADMIN_URL } from '../support/databases.js';
import { REDIS_TEST_URL } from '../support/redis.js';

export interface Backends {
  postgres: boolean;
  redis: boolean;
}

declare module 'vitest' {
  export interface ProvidedContext {
    backends: Backends;
  }
}

const PROBE_TIMEOUT_MS = 2_000;

export default async function setup(project: TestProject): Promise<void> {
  const [postgres, redis] = await Promise.all([
    probe(() => selectOne(PG_ADMIN_URL)),
    probe(() => ping(REDIS_TEST_URL)),
  ]);
  const missing: string[] = [];
  if (postgres !== true) {
    missing.push(
      `PostgreSQL at ${address(PG_ADMIN_URL, 5432)} is not reachable (${postgres})` +
        outcome('pg_ctlcluster $(ls /etc/postgresql) main start', 'TOLLGATE_TEST_PG_URL'),
    );
  }
  if (redis !== true) {
    const port = new URL(REDIS_TEST_URL).port || '6379';
    missing.push(
      `Redis at ${address(REDIS_TEST_URL, 6379)} is not reachable (${redis})` +
        outcome(`redis-server --daemonize yes --port ${port} --save "" --appendonly no`, 'TOLLGATE_TEST_REDIS_URL'),
    );
  }
  if (missing.length && inCI()) {
    // Thrown, vitest would report "No test files found" above the reason; this stops the run with the reason alone.
    console.error(`${missing.join('\n')}\nCI is set, and CI runs every suite: start the missing servers.`);
    process.exit(1);
  }
  for (const line of missing) console.warn(line);
  project.provide('backends', { postgres: postgres === true, redis: redis === true });
}

function outcome(start: string, variable: string): string {
  return inCI()
    ? '.'
    : `: the suites that need it are skipped. Start it with: ${start}, or set ${variable} (see README.md, Tests).`;
}

function inCI(): boolean {
  const ci = process.env.CI;
  return ci !== undefined && ci !== '' && ci !== '0' && ci.toLowerCase() !== 'false';
}

/** `true` when `check` succeeds within the time limit, else why not (an error code or message). */
async function probe(check: () => Promise<void>): Promise<true | string> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${PROBE_TIMEOUT_MS} ms`)), PROBE_TIMEOUT_MS + 500);
  });
  try {
    await Promise.race([check(), timeout]);
    return true;
  } catch (error) {
    return reason(error);
  } finally {
    clearTimeout(timer);
  }
}

async function selectOne(url: string): Promise<void> {
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: PROBE_TIMEOUT_MS,
    query_timeout: PROBE_TIMEOUT_MS,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('select 1');
  } finally {
    await client.end().catch(() => undefined);
  }
}

async function ping(url: string): Promise<void> {
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: PROBE_TIMEOUT_MS,
    commandTimeout: PROBE_TIMEOUT_MS,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
  });
  // ioredis rejects with "Connection is closed."; the error event says why.
  let failure: unknown;
  redis.on('error', (error) => (failure ??= error));
  try {
    await redis.connect();
    await redis.ping();
  } catch (error) {
    throw failure ?? error;
  } finally {
    redis.disconnect();
  }
}

/** A system error's code (ECONNREFUSED), else the message; connecting to localhost may fail on each address. */
function reason(error: unknown): string {
  const first = error instanceof AggregateError && error.errors.length ? error.errors[0] : error;
  const code = (first as { code?: unknown } | undefined)?.code;
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return code;
  return first instanceof Error ? first.message : String(first);
}

/** host:port of a server URL, without its credentials. */
function address(url: string, defaultPort: number): string {
  const parsed = new URL(url);
  return `${parsed.hostname}:${parsed.port || defaultPort}`;
}
