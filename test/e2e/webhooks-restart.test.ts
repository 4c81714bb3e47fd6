/**
 * Durability: a gateway process killed (SIGKILL) while a delivery waits for its retry delivers the event after
 * it is started again, exactly once. Runs the real entry point (`src/main.ts`) as a child process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { verifyWebhook } from '../../src/webhooks/receiver/index.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../support/databases.js';
import { sleep, startReceiver } from '../webhooks/receiver-server.js';
import { describeEach } from '../support/backends.js';

const ADMIN = 'restart-admin-token-0123456789';
const SECRET = 'restart-secret-0123456789-0123456789-01';
const children = new Set<ChildProcess>();
afterAll(() => children.forEach((child) => child.kill('SIGKILL')));

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

function startProcess(database: TestDatabase, port: number): Promise<ChildProcess> {
  const configFile = join(database.dataDir, 'tollgate.config.yaml');
  writeFileSync(configFile, 'webhooks:\n  allow_private_urls: true\n  poll_interval_ms: 50\n');
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: {
      ...process.env,
      TOLLGATE_CONFIG: configFile,
      TOLLGATE_DATA_DIR: database.dataDir,
      ...(database.databaseUrl ? { DATABASE_URL: database.databaseUrl } : {}),
      TOLLGATE_ADMIN_TOKEN: ADMIN,
      TOLLGATE_LOG_LEVEL: 'warn',
      PORT: String(port),
      HOST: '127.0.0.1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gateway did not start:\n${output}`)), 40_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('listening on')) {
        clearTimeout(timer);
        resolve(child);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`gateway exited (${code}):\n${output}`)));
  });
}

async function kill(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
  children.delete(child);
}

describeEach(DIALECTS)('a restart in the middle of a retry schedule (%s)', (dialect) => {
  it('delivers the event after the restart, exactly once', async () => {
    const database = await createTestDatabase(dialect);
    let attempts = 0;
    const receiver = await startReceiver(() => (++attempts === 1 ? 503 : 200));
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    let child = await startProcess(database, port);
    try {
      const account = (await (
        await fetch(`${base}/admin/accounts`, {
          method: 'POST',
          headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
          body: JSON.stringify({ email: `restart-${Date.now()}@example.com` }),
        })
      ).json()) as { api_key: string };
      const headers = { authorization: `Bearer ${account.api_key}`, 'content-type': 'application/json' };
      const created = await fetch(`${base}/v1/webhooks`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          url: receiver.url,
          secret: SECRET,
          events: [{ type: 'llm.completion' }],
          retryConfig: { maxAttempts: 3, initialDelay: 3000 },
        }),
      });
      expect(created.status).toBe(201);
      const webhook = (await created.json()) as { id: string };
      const chat = await fetch(`${base}/v1/chat/completions`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ model: 'sandbox/echo', messages: [{ role: 'user', content: 'survive a crash' }] }),
      });
      expect(chat.status).toBe(200);

      const [failed] = await receiver.waitFor(1);
      // The kill comes once the failure is recorded and the retry scheduled (~3 s later), however slow the machine.
      const listDeliveries = async () =>
        ((await (await fetch(`${base}/v1/webhooks/${webhook.id}/deliveries`, { headers })).json()) as { data: any[] })
          .data;
      for (let i = 0; i < 50 && (await listDeliveries())[0]?.attempts !== 1; i++) await sleep(100);
      await kill(child);
      expect(receiver.received).toHaveLength(1);

      child = await startProcess(database, port);
      const [, delivered] = await receiver.waitFor(2, undefined, 20_000);
      expect(delivered!.at - failed!.at).toBeGreaterThanOrEqual(2700 - 100);
      expect(delivered!.body).toBe(failed!.body);
      expect(verifyWebhook(delivered!.body, delivered!.headers, SECRET).ok).toBe(true);
      await sleep(1000);
      expect(receiver.received).toHaveLength(2);
      const deliveries = await listDeliveries();
      expect(deliveries).toHaveLength(1);
      expect(deliveries[0]).toMatchObject({ status: 'succeeded', attempts: 2, last_status: 200 });
    } finally {
      await kill(child).catch(() => undefined);
      await receiver.close();
      await database.drop();
    }
  }, 90_000);
});
