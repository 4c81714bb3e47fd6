/** TOLLGATE_WORKERS: several server processes on one port, sharing PostgreSQL and Redis. */
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { afterAll, expect, it } from 'vitest';
import { createTestDatabase, tempDir, type TestDatabase } from '../support/databases.js';
import { freePort } from '../support/replicas.js';
import { needsPostgresAndRedis } from '../support/backends.js';
import { deleteRedisKeys, REDIS_TEST_URL } from '../support/redis.js';

const prefix = `tgtest:workers:${process.pid}:`;
let database: TestDatabase | undefined;

afterAll(async () => {
  await database?.drop();
  await deleteRedisKeys(prefix);
});

function start(env: Record<string, string>) {
  const child = spawn(process.execPath, ['dist/main.js'], {
    env: {
      PATH: process.env.PATH ?? '',
      HOST: '127.0.0.1',
      TOLLGATE_LOG_LEVEL: 'warn',
      TOLLGATE_DATA_DIR: tempDir(),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

/** One chat request on its own connection (the cluster hands each new connection to the next worker). */
function postOnNewConnection(port: string, key: string): Promise<{ status: number; requestId: string }> {
  const body = JSON.stringify({ model: 'sandbox/echo', messages: [{ role: 'user', content: 'which worker?' }] });
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v1/chat/completions',
        agent: false,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, requestId: String(res.headers['x-request-id']) }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

// Start-up takes about 1 s; the wait only guards against a hang.
async function until(check: () => boolean, output: () => string, ms = 40_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out; output was:\n${output()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

needsPostgresAndRedis('workers (PostgreSQL + Redis)', { timeout: 120_000 }, () => {
  it('runs several server processes on one port, with one first-start banner, and stops them all on SIGTERM', async () => {
    database = await createTestDatabase('postgres');
    const port = String(await freePort());
    const server = start({
      PORT: port,
      TOLLGATE_WORKERS: '2',
      DATABASE_URL: database.databaseUrl!,
      REDIS_URL: REDIS_TEST_URL,
      TOLLGATE_REDIS_PREFIX: prefix,
    });
    await until(() => (server.output().match(/listening on/g) ?? []).length >= 2, server.output);
    expect(server.output()).toMatch(/supervising 2 workers/);
    expect(server.output().match(/API key:/g)).toHaveLength(1);
    const key = /API key:\s+(tg-live-\S+)/.exec(server.output())![1]!;

    const pids = new Set<string>();
    for (let i = 0; i < 40 && pids.size < 2; i++) {
      const { status, requestId } = await postOnNewConnection(port, key);
      expect(status).toBe(200);
      pids.add(requestId.slice(4, 16));
    }
    // Request ids carry a random tag per process: two tags, two processes answered.
    expect(pids.size).toBe(2);

    server.child.kill('SIGTERM');
    expect(await server.exited).toBe(0);
  });

  it('refuses more than one worker without PostgreSQL and Redis', async () => {
    const server = start({ PORT: '0', TOLLGATE_WORKERS: '2' });
    expect(await server.exited).toBe(1);
    expect(server.output()).toMatch(/workers: more than one worker needs DATABASE_URL and REDIS_URL/);
  });
});
