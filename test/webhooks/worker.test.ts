/**
 * The delivery worker against a stand-in outbox: a shutdown that arrives while a claim is under way waits for
 * that claim and its attempts, so nothing claimed is left `delivering` (to be sent again when the lease expires).
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AttemptResult, DeliveryRecord, Storage, WebhookRecord } from '../../src/storage/index.js';
import { DeliveryWorker } from '../../src/webhooks/index.js';
import { sleep, startReceiver, type Receiver } from './receiver-server.js';

let receiver: Receiver;
beforeAll(async () => {
  receiver = await startReceiver();
});
afterAll(async () => receiver?.close());

function fakeStorage(claimDelayMs: number) {
  const now = Date.now();
  const webhook: WebhookRecord = {
    id: 'wh_1',
    accountId: 'acct_1',
    url: `${receiver.url}/worker`,
    secret: 'worker-test-secret-0123456789-0123456789',
    events: [{ type: 'llm.completion' }],
    headers: {},
    timeoutMs: 2000,
    retry: { maxAttempts: 3, initialDelay: 100, maxDelay: 1000, backoffMultiplier: 2 },
    description: null,
    createdAt: now,
    updatedAt: now,
  };
  const row: DeliveryRecord = {
    id: 'whd_1',
    webhookId: webhook.id,
    accountId: webhook.accountId,
    eventId: 'evt_1',
    eventType: 'llm.completion',
    payload: JSON.stringify({ id: 'evt_1', timestamp: new Date().toISOString(), event: 'llm.completion', data: {} }),
    status: 'delivering',
    attempts: 0,
    nextAttemptAt: now,
    lastStatus: null,
    lastError: null,
    createdAt: now,
    updatedAt: now,
    completedAt: null,
  };
  let claimed = false;
  const finished: AttemptResult[] = [];
  const webhooks = {
    async claim() {
      await sleep(claimDelayMs);
      if (claimed) return [];
      claimed = true;
      return [row];
    },
    getMany: () => Promise.resolve([webhook]),
    finishAttempt(_id: string, _token: string, result: AttemptResult) {
      finished.push(result);
      return Promise.resolve(true);
    },
  };
  return { storage: { webhooks } as unknown as Storage, finished };
}

describe('DeliveryWorker.stop', () => {
  it('waits for a claim under way and the attempt it started, and records its outcome', async () => {
    const { storage, finished } = fakeStorage(150);
    const worker = new DeliveryWorker({
      storage,
      concurrency: 4,
      pollIntervalMs: 10_000,
      allowPrivate: true,
      logger: pino({ level: 'silent' }),
    });
    worker.start();
    await sleep(20); // the claim is under way
    await worker.stop();
    expect(receiver.received.filter((r) => r.path === '/worker')).toHaveLength(1);
    expect(finished).toEqual([expect.objectContaining({ status: 'succeeded', attempts: 1, lastStatus: 200 })]);
  });
});
