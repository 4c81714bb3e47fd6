/**
 * Events raised by real chat requests: built only for the types and accounts that subscribed, never on the
 * request path's clock, and one credit.low_balance for concurrent requests that cross 1 USD together.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { GatewayEvent } from '../../src/events/index.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { sleep, startReceiver, TEST_WEBHOOKS, type Receiver } from '../webhooks/receiver-server.js';

const SECRET = 'events-secret-0123456789-0123456789-0123';
let gateway: TestGateway;
const receivers: Receiver[] = [];
/** Every event handed to the webhook outbox, i.e. every event the gateway built. */
const built: GatewayEvent[] = [];

beforeAll(async () => {
  gateway = await startGateway({ overrides: { webhooks: TEST_WEBHOOKS } });
  const sink = gateway.app.webhooks.sink;
  const emit = sink.emit.bind(sink);
  vi.spyOn(sink, 'emit').mockImplementation((event) => {
    built.push(event);
    emit(event);
  });
  // Events caused by a debit are built as outbox rows written with it.
  const rows = sink.rows!.bind(sink);
  vi.spyOn(sink, 'rows').mockImplementation((event) => {
    built.push(event);
    return rows(event);
  });
});
afterAll(async () => {
  await gateway?.close();
  await Promise.all(receivers.map((r) => r.close()));
});

async function receiver(respond?: Parameters<typeof startReceiver>[0]): Promise<Receiver> {
  const r = await startReceiver(respond);
  receivers.push(r);
  return r;
}

async function register(key: string, body: Record<string, unknown>): Promise<void> {
  const response = await fetch(`${gateway.baseURL}/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ secret: SECRET, ...body }),
  });
  if (response.status !== 201) throw new Error(await response.text());
}

const ask = (key: string, stream = false) =>
  stream
    ? gateway
        .client(key)
        .chat.completions.create({
          model: 'sandbox/lorem',
          max_tokens: 12,
          stream: true,
          messages: [{ role: 'user', content: 'stream' }],
        })
        .then(async (s) => {
          for await (const _ of s);
        })
    : gateway.client(key).chat.completions.create({
        model: 'sandbox/lorem',
        max_tokens: 12,
        messages: [{ role: 'user', content: 'spend' }],
      });

describe('events are built for subscribers only', () => {
  it('builds nothing for an account or a type nobody subscribed to', async () => {
    const r = await receiver();
    const subscribed = await gateway.account();
    const other = await gateway.account();
    await register(subscribed.key, {
      url: r.url,
      events: [{ type: 'llm.completion' }, { type: 'credit.low_balance' }],
    });

    await ask(other.key);
    await ask(other.key, true);
    await gateway.setBalance(other.id, 1.000001);
    await ask(other.key);
    await ask(subscribed.key, true);
    await gateway.setBalance(subscribed.id, 1.000001);
    await ask(subscribed.key);
    await r.waitFor(3);
    await sleep(200);

    expect(built.filter((e) => e.accountId === other.id)).toEqual([]);
    expect(
      built
        .filter((e) => e.accountId === subscribed.id)
        .map((e) => e.type)
        .sort(),
    ).toEqual(['credit.low_balance', 'llm.completion', 'llm.completion']);
    expect(r.received).toHaveLength(3);
  });
});

describe('credit.low_balance from concurrent requests', () => {
  it('fires exactly once when ten concurrent chat requests drive the balance below 1 USD', async () => {
    const r = await receiver();
    const account = await gateway.account();
    const spender = await gateway.key(account.id);
    await register(account.key, { url: r.url, events: [{ type: 'credit.low_balance' }] });
    // One request costs about 0.000009 USD: the ten of them cross 1 USD about halfway.
    await gateway.setBalance(account.id, 1.00004);
    await Promise.all(Array.from({ length: 10 }, () => ask(spender.key)));
    const balance = (await gateway.admin('GET', `/admin/accounts/${account.id}`)).body.balance.credits as number;
    expect(balance).toBeLessThan(1);
    const [delivery] = await r.waitFor(1);
    await sleep(300);
    expect(r.received).toHaveLength(1);
    expect(JSON.parse(delivery!.body).data).toMatchObject({
      threshold: 1,
      api_key_id: spender.id,
      account_id: account.id,
    });
  });
});

describe('per-account thresholds', () => {
  it('fires at the thresholds set through the admin API instead of the default 1 USD', async () => {
    const r = await receiver();
    const account = await gateway.account();
    await register(account.key, { url: r.url, events: [{ type: 'credit.low_balance' }] });
    const patched = await gateway.admin('PATCH', `/admin/accounts/${account.id}`, { low_balance_thresholds: [2, 0.5] });
    expect(patched.status).toBe(200);
    await gateway.setBalance(account.id, 2.000001);
    await ask(account.key);
    await gateway.setBalance(account.id, 1.000001);
    await ask(account.key);
    await gateway.setBalance(account.id, 0.500001);
    await ask(account.key);
    await r.waitFor(2);
    await sleep(300);
    expect(r.received.map((x) => JSON.parse(x.body).data.threshold)).toEqual([2, 0.5]);
  });
});

describe('delivery is off the request path', () => {
  it('answers chat requests at once while every receiver hangs', async () => {
    const hanging = await receiver(() => 'hang');
    const account = await gateway.account();
    for (let i = 0; i < 5; i++)
      await register(account.key, { url: `${hanging.url}/${i}`, events: [{ type: 'llm.completion' }], timeout: 3000 });
    const took: number[] = [];
    for (let i = 0; i < 5; i++) {
      const started = performance.now();
      await ask(account.key);
      took.push(performance.now() - started);
    }
    await hanging.waitFor(5);
    // A delivery on the request path would take the receiver's timeout (3 s) per request.
    expect(Math.max(...took)).toBeLessThan(1000);
  });
});
