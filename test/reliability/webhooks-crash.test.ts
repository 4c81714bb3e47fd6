/**
 * Webhook durability across a crash, twice per case: 50 requests in flight (JSON and streams, live and test keys),
 * the gateway process killed with SIGKILL, started again on the same data. Every request a client had been
 * answered in full has its `llm.completion` in the outbox and received (one event per request, each event id
 * received once), and so has every low-balance threshold the committed debits crossed (`credit.low_balance`).
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { startChildGateway, type ChildGateway } from '../support/child-gateway.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../support/databases.js';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.js';
import { sleep, startReceiver, type Receiver } from '../webhooks/receiver-server.js';
import { describeEach } from '../support/backends.js';

const MODEL = 'gpt-6-luna';
const IN_FLIGHT = 50;
/** Answers (live key) after which the process is killed. */
const KILL_AFTER = 120;
const THRESHOLDS = 10;

interface Delivered {
  eventId: string;
  event: string;
  data: any;
}

let cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step().catch(() => undefined);
  cleanup = [];
});

async function post(url: string, key: string, path: string, body: object): Promise<Response> {
  return fetch(`${url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

/** The request id when the client got the whole answer (a stream up to [DONE]), else undefined. */
async function answered(gateway: ChildGateway, key: string, stream: boolean, n: number): Promise<string | undefined> {
  const body = {
    model: MODEL,
    max_tokens: 50,
    messages: [{ role: 'user', content: `request ${n}` }],
    ...(stream ? { stream, stream_options: { include_usage: true } } : {}),
  };
  const res = await post(gateway.url, key, '/v1/chat/completions', body);
  const text = await res.text();
  if (res.status !== 200) return undefined;
  if (stream && !text.trimEnd().endsWith('data: [DONE]')) return undefined;
  return res.headers.get('x-request-id')!;
}

async function balanceNano(gateway: ChildGateway, accountId: string): Promise<bigint> {
  const { body } = await gateway.admin('GET', `/admin/accounts/${accountId}`);
  return BigInt(Math.round(body.balance.credits * 1e9));
}

async function setUp(database: TestDatabase): Promise<{ gateway: ChildGateway; mock: MockOpenAI; receiver: Receiver }> {
  const mock = await startMockOpenAI({
    apiKey: 'sk-webhooks-crash',
    route: (body) => (body.stream ? { kind: 'ok', chunks: 3, delayMs: 5 } : { kind: 'ok', latencyMs: 10 }),
  });
  cleanup.push(() => mock.close());
  const receiver = await startReceiver(() => 200);
  cleanup.push(() => receiver.close());
  const configFile = join(database.dataDir, 'webhooks-crash.yaml');
  writeFileSync(configFile, 'webhooks:\n  allow_private_urls: true\n  poll_interval_ms: 50\n  refresh_ms: 200\n');
  const gateway = await startChildGateway({
    dataDir: database.dataDir,
    adminToken: `webhooks-crash-${randomBytes(8).toString('hex')}`,
    env: {
      TOLLGATE_CONFIG: configFile,
      ...(database.databaseUrl ? { DATABASE_URL: database.databaseUrl } : {}),
      OPENAI_API_KEY: 'sk-webhooks-crash',
      OPENAI_BASE_URL: mock.url,
    },
  });
  cleanup.push(() => gateway.kill('SIGKILL'));
  return { gateway, mock, receiver };
}

interface Outboxed {
  status: string;
  attempts: number;
  event: string;
  data: any;
}

/** Every delivery of the webhook, from the API. */
async function outboxOf(gateway: ChildGateway, key: string, webhookId: string): Promise<Outboxed[]> {
  const all: Outboxed[] = [];
  for (let before = ''; ;) {
    const res = await fetch(
      `${gateway.url}/v1/webhooks/${webhookId}/deliveries?limit=100${before ? `&before=${before}` : ''}`,
      { headers: { authorization: `Bearer ${key}` } },
    );
    const page = (await res.json()) as {
      data: Array<{ id: string; status: string; attempts: number; payload: { event: string; data: any } }>;
      has_more: boolean;
    };
    for (const d of page.data)
      all.push({ status: d.status, attempts: d.attempts, event: d.payload.event, data: d.payload.data });
    if (!page.has_more) return all;
    before = page.data[page.data.length - 1]!.id;
  }
}

function deliveries(receiver: Receiver): Delivered[] {
  return receiver.received.map((r) => {
    const envelope = JSON.parse(r.body);
    return { eventId: String(r.headers['x-webhook-id']), event: envelope.event, data: envelope.data };
  });
}

describeEach(DIALECTS)('SIGKILL under load with webhooks (%s)', (dialect) => {
  it(
    'delivers every answered request and every committed low-balance crossing after the restart',
    { timeout: 60_000 },
    async () => {
      const database = await createTestDatabase(dialect);
      cleanup.push(() => database.drop());
      const { gateway, receiver } = await setUp(database);

      const { body: account } = await gateway.admin('POST', '/admin/accounts', {
        email: `webhooks-crash-${dialect}@example.com`,
        plan: 'enterprise',
      });
      const live: string = account.api_key;
      const { body: testKey } = await gateway.admin('POST', `/admin/accounts/${account.id}/keys`, {
        environment: 'test',
      });
      const created = await post(gateway.url, live, '/v1/webhooks', {
        url: receiver.url,
        secret: 'webhooks-crash-secret-0123456789-abcdef',
        events: [{ type: 'llm.completion' }, { type: 'credit.low_balance' }],
      });
      expect(created.status).toBe(201);
      const webhook = (await created.json()) as { id: string };

      // Two rounds of load, each ended by SIGKILL and followed by a restart. Before each, low-balance thresholds are
      // set a few answers apart around the answer after which the kill comes.
      const answeredIds: string[] = [];
      const crossed: bigint[] = [];
      const kinds = new Map<string, string>();
      const claimedByTheDead: Outboxed[] = [];
      let n = 0;
      for (const round of [1, 2]) {
        const start = await balanceNano(gateway, account.id);
        const json = await answered(gateway, live, false, n++);
        const afterJson = await balanceNano(gateway, account.id);
        const stream = await answered(gateway, live, true, n++);
        const afterStream = await balanceNano(gateway, account.id);
        answeredIds.push(json!, stream!);
        // Every third live answer is a stream.
        const cost = (2n * (start - afterJson) + (afterJson - afterStream)) / 3n;
        const thresholds = Array.from(
          { length: THRESHOLDS },
          (_, i) => afterStream - cost * BigInt(KILL_AFTER - 10 + 3 * i),
        );
        const patched = await gateway.admin('PATCH', `/admin/accounts/${account.id}`, {
          low_balance_thresholds: thresholds.map((t) => Number(t) / 1e9),
        });
        expect(patched.status).toBe(200);
        if (round === 1) await sleep(300); // the registration reaches the subscription index (refresh_ms)

        // 50 clients in a loop (every fifth on the test key) until the kill.
        let liveAnswers = 0;
        let killed = false;
        const client = async (c: number) => {
          while (!killed) {
            const i = n++;
            const test = c % 5 === 4;
            const id = await answered(gateway, test ? testKey.key : live, i % 3 === 0, i).catch(() => undefined);
            if (id === undefined || killed) continue;
            answeredIds.push(id);
            kinds.set(id, `${test ? 'test' : 'live'}${i % 3 === 0 ? '-stream' : ''}`);
            if (!test && ++liveAnswers === KILL_AFTER) {
              killed = true;
              await gateway.kill('SIGKILL');
            }
          }
        };
        await Promise.all(Array.from({ length: IN_FLIGHT }, (_, c) => client(c)));
        await gateway.start();
        // What the killed process had claimed is attempted again once its lease runs out; it may have reached the
        // receiver already (at least once).
        claimedByTheDead.push(...(await outboxOf(gateway, live, webhook.id)).filter((d) => d.status === 'delivering'));
        const end = await balanceNano(gateway, account.id);
        crossed.push(...thresholds.filter((t) => afterStream >= t && end < t));
      }
      expect(answeredIds.length).toBeGreaterThanOrEqual(2 * KILL_AFTER);
      expect(crossed.length).toBeGreaterThanOrEqual(4);

      // Every answered request and every crossing is received, those the killed process had claimed too (after their
      // lease runs out).
      const completionOf = (d: { event: string }) => d.event === 'llm.completion';
      const keyOf = (d: { event: string; data: any }) =>
        completionOf(d) ? String(d.data.requestId) : `threshold ${BigInt(Math.round(d.data.threshold * 1e9))}`;
      const expected = [...answeredIds, ...crossed.map((t) => `threshold ${t}`)];
      const until = Date.now() + 30_000;
      const missing = () => {
        const received = new Set(deliveries(receiver).map(keyOf));
        return expected.filter((k) => !received.has(k));
      };
      while (missing().length > 0 && Date.now() < until) await sleep(250);
      await sleep(500); // anything delivered twice arrives too
      const outbox: Outboxed[] = await outboxOf(gateway, live, webhook.id);
      const lost = missing();
      const inOutbox = new Set(outbox.map(keyOf));
      const got = deliveries(receiver);
      console.log(
        `webhooks crash (${dialect}): ${answeredIds.length} answered, ${crossed.length} thresholds crossed; ${lost.length} not delivered, ` +
          `${expected.filter((k) => !inOutbox.has(k)).length} not in the outbox, ${outbox.filter((d) => d.status === 'delivering').length} left claimed by the killed process`,
      );
      expect(lost.map((k) => kinds.get(k) ?? k)).toEqual([]);

      // Exactly once, but for what a killed process had claimed: one delivery row per request and crossing, each
      // received once.
      const deadKeys = new Set(claimedByTheDead.map(keyOf));
      const receivedCount = new Map<string, number>();
      for (const d of got) receivedCount.set(keyOf(d), (receivedCount.get(keyOf(d)) ?? 0) + 1);
      expect([...receivedCount].filter(([key, count]) => count > 1 && !deadKeys.has(key))).toEqual([]);
      expect(outbox.length).toBe(new Set(outbox.map(keyOf)).size);
    },
  );
});
