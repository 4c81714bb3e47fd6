/**
 * The outbox claim: on PostgreSQL two workers on one real database never send one delivery twice
 * (`FOR UPDATE SKIP LOCKED` + leases); on both dialects an expired lease is taken over and the late worker's
 * outcome is refused.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import pino from 'pino';
import { AdminService } from '../../src/admin/index.js';
import { loadConfig } from '../../src/config/index.js';
import { newId, openStorage, type DeliveryRecord, type Storage } from '../../src/storage/index.js';
import { DeliveryWorker } from '../../src/webhooks/index.js';
import { createTestDatabase, DIALECTS } from '../support/databases.js';
import { sleep, startReceiver, type Receiver } from './receiver-server.js';
import { describeEach, needsPostgres } from '../support/backends.js';

const SECRET = 'claim-test-secret-0123456789-0123456789';

async function setup(dialect: 'sqlite' | 'postgres') {
  const database = await createTestDatabase(dialect);
  const options = { dataDir: database.dataDir, databaseUrl: database.databaseUrl };
  const storage = await openStorage(options);
  const config = loadConfig({ env: { TOLLGATE_DATA_DIR: database.dataDir }, file: undefined });
  const { account } = await new AdminService(storage, config, 'k'.repeat(32), {
    onChange: () => undefined,
  }).createAccount({ email: `claim-${Date.now()}@example.com` });
  return { database, options, storage, accountId: account.id };
}

async function seed(storage: Storage, accountId: string, url: string, count: number): Promise<string> {
  const webhookId = newId('wh');
  const now = Date.now();
  await storage.webhooks.create({
    id: webhookId,
    accountId,
    url,
    secret: SECRET,
    events: [{ type: 'llm.completion' }],
    headers: {},
    timeoutMs: 5000,
    retry: { maxAttempts: 3, initialDelay: 100, maxDelay: 1000, backoffMultiplier: 2 },
    description: null,
    createdAt: now,
    updatedAt: now,
  });
  const rows = Array.from({ length: count }, (_, i) => {
    const eventId = `evt_${i}`;
    const payload = JSON.stringify({
      id: eventId,
      timestamp: new Date().toISOString(),
      event: 'llm.completion',
      data: { i },
    });
    return { id: newId('whd'), webhookId, accountId, eventId, eventType: 'llm.completion', payload, at: now };
  });
  await storage.webhooks.insertDeliveries(rows);
  return webhookId;
}

needsPostgres('two delivery workers on one PostgreSQL database', () => {
  let env: Awaited<ReturnType<typeof setup>>;
  let second: Storage;
  let receiver: Receiver;
  beforeAll(async () => {
    env = await setup('postgres');
    second = await openStorage(env.options);
    // A little latency per answer, so both workers are busy at the same time.
    receiver = await startReceiver(() => 200);
  });
  afterAll(async () => {
    await receiver?.close();
    await second?.close();
    await env?.storage.close();
    await env?.database.drop();
  });

  it('delivers each of 300 deliveries exactly once, both workers taking part', async () => {
    await seed(env.storage, env.accountId, receiver.url, 300);
    const claimed = [0, 0];
    const count = (storage: Storage, i: number) => {
      const claim = storage.webhooks.claim.bind(storage.webhooks);
      storage.webhooks.claim = async (...args) => {
        const rows = await claim(...args);
        claimed[i]! += rows.length;
        return rows;
      };
    };
    count(env.storage, 0);
    count(second, 1);
    const logger = pino({ level: 'silent' });
    const workers = [env.storage, second].map(
      (storage) => new DeliveryWorker({ storage, concurrency: 8, pollIntervalMs: 5, allowPrivate: true, logger }),
    );
    workers.forEach((w) => w.start());
    try {
      await receiver.waitFor(300, undefined, 30_000);
      await sleep(500);
    } finally {
      await Promise.all(workers.map((w) => w.stop()));
    }
    const ids = receiver.received.map((r) => r.headers['x-webhook-id']);
    expect(ids).toHaveLength(300);
    expect(new Set(ids).size).toBe(300);
    expect(claimed[0]).toBeGreaterThan(0);
    expect(claimed[1]).toBeGreaterThan(0);
    expect(claimed[0]! + claimed[1]!).toBe(300);
  });

  it('hands out disjoint rows to 20 concurrent claims', async () => {
    const webhookId = await seed(env.storage, env.accountId, receiver.url, 100);
    const claims = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (i % 2 ? second : env.storage).webhooks.claim(Date.now(), 10, 60_000, `token-${i}`),
      ),
    );
    const rows = claims.flat().filter((row: DeliveryRecord) => row.webhookId === webhookId);
    expect(rows).toHaveLength(100);
    expect(new Set(rows.map((row) => row.id)).size).toBe(100);
  });
});

needsPostgres('caps on attempts in flight, two storages on one PostgreSQL database', () => {
  let env: Awaited<ReturnType<typeof setup>>;
  let second: Storage;
  beforeAll(async () => {
    env = await setup('postgres');
    second = await openStorage(env.options);
  });
  afterAll(async () => {
    await second?.close();
    await env?.storage.close();
    await env?.database.drop();
  });

  it('never lets 20 concurrent claims take more than the caps between them', async () => {
    const webhooks = [
      await seed(env.storage, env.accountId, 'http://127.0.0.1:9/a', 100),
      await seed(env.storage, env.accountId, 'http://127.0.0.1:9/b', 100),
    ];
    const caps = { perEndpoint: 4, perAccount: 6 };
    const claims = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (i % 2 ? second : env.storage).webhooks.claim(Date.now(), 10, 60_000, `token-${i}`, caps),
      ),
    );
    const rows = claims.flat();
    expect(rows).toHaveLength(6);
    for (const webhookId of webhooks)
      expect(rows.filter((row) => row.webhookId === webhookId).length).toBeLessThanOrEqual(4);
    // Once the claims' leases run out, their rows are due again, within the same caps.
    expect(await env.storage.webhooks.claim(Date.now() + 60_001, 100, 60_000, 'later', caps)).toHaveLength(6);
  });
});

describeEach(DIALECTS)('leases on %s', (dialect) => {
  let env: Awaited<ReturnType<typeof setup>>;
  beforeAll(async () => {
    env = await setup(dialect);
  });
  afterAll(async () => {
    await env?.storage.close();
    await env?.database.drop();
  });

  it('lets another worker take a delivery whose claim expired, and refuses the late outcome', async () => {
    await seed(env.storage, env.accountId, 'http://127.0.0.1:9/', 1);
    const store = env.storage.webhooks;
    const [first] = await store.claim(Date.now(), 10, 50, 'worker-a');
    expect(first).toBeDefined();
    expect(await store.claim(Date.now(), 10, 50, 'worker-b')).toEqual([]);
    await sleep(80);
    const [again] = await store.claim(Date.now(), 10, 60_000, 'worker-b');
    expect(again!.id).toBe(first!.id);
    const outcome = {
      status: 'succeeded' as const,
      attempts: 1,
      nextAttemptAt: Date.now(),
      lastStatus: 200,
      lastError: null,
      at: Date.now(),
    };
    expect(await store.finishAttempt(first!.id, 'worker-a', outcome)).toBe(false);
    expect(await store.finishAttempt(first!.id, 'worker-b', outcome)).toBe(true);
    expect((await store.getDelivery(first!.id))!.status).toBe('succeeded');
  });

  it('renews the lease of an attempt that outlasts it, so a second worker never sends it again', async () => {
    // A receiver that takes three leases' time to answer.
    const received: number[] = [];
    const slow = createServer((request, response) => {
      request.resume().on('end', () => {
        received.push(Date.now());
        setTimeout(() => response.writeHead(200).end('ok'), 1_500);
      });
    });
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    const webhookId = await seed(
      env.storage,
      env.accountId,
      `http://127.0.0.1:${(slow.address() as AddressInfo).port}/`,
      1,
    );
    const logger = pino({ level: 'silent' });
    const workers = [0, 1].map(
      () =>
        new DeliveryWorker({
          storage: env.storage,
          concurrency: 4,
          pollIntervalMs: 50,
          leaseMs: 500,
          allowPrivate: true,
          logger,
        }),
    );
    workers.forEach((worker) => worker.start());
    try {
      await sleep(2_300);
    } finally {
      await Promise.all(workers.map((worker) => worker.stop()));
      await new Promise((resolve) => slow.close(resolve));
    }
    expect(received).toHaveLength(1);
    const [delivery] = await env.storage.webhooks.listDeliveries({ webhookId }, { limit: 10 });
    expect(delivery).toMatchObject({ status: 'succeeded', attempts: 1 });
  });
});
