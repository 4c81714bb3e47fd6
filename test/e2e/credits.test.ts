/** GET /v1/credits as a customer sees it: the full form of spec 2.2, the simplified form, usage and test keys. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type TestGateway } from '../support/gateway.js';

async function credits(gw: TestGateway, key: string) {
  const response = await fetch(`${gw.url}/v1/credits`, { headers: { authorization: `Bearer ${key}` } });
  return { status: response.status, headers: response.headers, body: (await response.json()) as any };
}

const nano = (usd: number) => BigInt(Math.round(usd * 1e9));

/** Every number in the body, with its JSON path. */
function numbers(value: unknown, path = '$'): Array<[string, number]> {
  if (typeof value === 'number') return [[path, value]];
  if (Array.isArray(value)) return value.flatMap((v, i) => numbers(v, `${path}[${i}]`));
  if (value && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => numbers(v, `${path}.${k}`));
  return [];
}

function expectUsageShape(usage: any): void {
  expect(Object.keys(usage).sort()).toEqual(['credits_used', 'requests', 'tokens']);
  expect(typeof usage.credits_used).toBe('number');
  expect(Number.isInteger(usage.requests)).toBe(true);
  expect(Object.keys(usage.tokens).sort()).toEqual(['completion', 'prompt', 'total']);
  for (const k of ['prompt', 'completion', 'total']) expect(Number.isInteger(usage.tokens[k])).toBe(true);
  expect(usage.tokens.total).toBe(usage.tokens.prompt + usage.tokens.completion);
}

describe('GET /v1/credits', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway();
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('a full key gets the full form of spec 2.2, field by field', async () => {
    const { key } = await gw.account();
    const { status, body } = await credits(gw, key);
    expect(status).toBe(200);
    expect(Object.keys(body).sort()).toEqual(['balance', 'billing', 'limits', 'object', 'usage']);
    expect(body.object).toBe('credit_balance');
    expect(body.balance).toEqual({ credits: 5, currency: 'USD' });

    expect(Object.keys(body.usage).sort()).toEqual(['daily', 'monthly']);
    expectUsageShape(body.usage.daily);
    expectUsageShape(body.usage.monthly);
    expect(body.usage.daily).toEqual({ credits_used: 0, requests: 0, tokens: { prompt: 0, completion: 0, total: 0 } });
    expect(body.usage.monthly).toEqual({
      credits_used: 0,
      requests: 0,
      tokens: { prompt: 0, completion: 0, total: 0 },
    });

    expect(Number.isInteger(body.limits.rate_limit.requests_per_minute)).toBe(true);
    expect(Number.isInteger(body.limits.rate_limit.tokens_per_minute)).toBe(true);
    expect(body.limits.rate_limit).toEqual({ requests_per_minute: 60, tokens_per_minute: 100_000 });
    expect(body.limits.daily_limit).toEqual({ credits: 5, remaining: 5 });

    expect(body.billing.plan).toBe('free');
    expect(typeof body.billing.auto_recharge.enabled).toBe('boolean');
    expect(typeof body.billing.auto_recharge.threshold).toBe('number');
    expect(typeof body.billing.auto_recharge.amount).toBe('number');
    expect(body.billing.auto_recharge.enabled).toBe(false);
    expect(typeof body.billing.next_billing_date).toBe('string');
  });

  it('next_billing_date is 00:00 UTC on the first day of next month', async () => {
    const { body } = await credits(gw, gw.firstKey);
    const now = new Date();
    const expected = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
    expect(body.billing.next_billing_date).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/);
    expect(new Date(body.billing.next_billing_date).getTime()).toBe(expected.getTime());
  });

  it('usage goes up and the balance goes down by exactly the sum of usage.cost', async () => {
    const { key } = await gw.account();
    const client = gw.client(key);
    const before = (await credits(gw, key)).body;

    let costNano = 0n;
    let prompt = 0;
    let completion = 0;
    const prompts = ['Hello there', 'A somewhat longer question about the weather in Lisbon next week', 'Third one'];
    for (const content of prompts) {
      const response = await client.chat.completions.create({
        model: 'sandbox/echo',
        messages: [{ role: 'user', content }],
      });
      const usage = response.usage as typeof response.usage & { cost: number };
      expect(typeof usage.cost).toBe('number');
      expect(usage.cost).toBeGreaterThan(0);
      costNano += nano(usage.cost);
      prompt += usage.prompt_tokens;
      completion += usage.completion_tokens;
    }
    const streamed = await client.chat.completions.create({
      model: 'sandbox/lorem',
      messages: [{ role: 'user', content: 'stream please' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let streamUsage: any;
    for await (const chunk of streamed) if (chunk.usage) streamUsage = chunk.usage;
    expect(streamUsage).toBeDefined();
    costNano += nano(streamUsage.cost);
    prompt += streamUsage.prompt_tokens;
    completion += streamUsage.completion_tokens;

    const after = (await credits(gw, key)).body;
    expect(nano(before.balance.credits) - nano(after.balance.credits)).toBe(costNano);
    for (const period of ['daily', 'monthly'] as const) {
      const used = after.usage[period];
      expect(used.requests, period).toBe(before.usage[period].requests + 4);
      expect(used.tokens.prompt, period).toBe(before.usage[period].tokens.prompt + prompt);
      expect(used.tokens.completion, period).toBe(before.usage[period].tokens.completion + completion);
      expect(used.tokens.total, period).toBe(used.tokens.prompt + used.tokens.completion);
      expect(nano(used.credits_used) - nano(before.usage[period].credits_used), period).toBe(costNano);
    }
    expect(nano(after.limits.daily_limit.remaining)).toBe(nano(5) - costNano);

    for (const [path, value] of numbers(after)) {
      expect(Number.isFinite(value), path).toBe(true);
      expect(Number(value.toFixed(9)), `${path} = ${value} has more than 9 decimals`).toBe(value);
    }
  });

  it('read_only and project keys get the simplified form {object, balance} only', async () => {
    const { id } = await gw.account();
    for (const options of [
      { permissions: 'read_only' },
      { permissions: 'project' },
      { permissions: 'project', models: ['sandbox/echo'], spend_limit: 1 },
    ]) {
      const { key } = await gw.key(id, options);
      const { status, body } = await credits(gw, key);
      expect(status, JSON.stringify(options)).toBe(200);
      expect(body, JSON.stringify(options)).toEqual({
        object: 'credit_balance',
        balance: { credits: 5, currency: 'USD' },
      });
    }
  });

  it('a test key costs nothing, leaves the live balance alone and counts its usage apart', async () => {
    const { id, key: liveKey } = await gw.account();
    const { key: testKey } = await gw.key(id, { environment: 'test' });
    const liveBefore = (await credits(gw, liveKey)).body;
    const testBefore = (await credits(gw, testKey)).body;
    expect(testBefore.usage.daily.requests).toBe(0);

    const response = await gw
      .client(testKey)
      .chat.completions.create({ model: 'sandbox/echo', messages: [{ role: 'user', content: 'free of charge' }] });
    const usage = response.usage as typeof response.usage & { cost: number };
    expect(usage.cost).toBe(0);
    expect(usage.total_tokens).toBeGreaterThan(0);

    const liveAfter = (await credits(gw, liveKey)).body;
    expect(liveAfter.balance).toEqual(liveBefore.balance);
    expect(liveAfter.usage).toEqual(liveBefore.usage);
    expect(liveAfter.limits.daily_limit).toEqual(liveBefore.limits.daily_limit);

    const testAfter = (await credits(gw, testKey)).body;
    expect(testAfter.balance).toEqual(liveBefore.balance);
    for (const period of ['daily', 'monthly'] as const) {
      expect(testAfter.usage[period].requests).toBe(1);
      expect(testAfter.usage[period].tokens).toEqual({
        prompt: usage.prompt_tokens,
        completion: usage.completion_tokens,
        total: usage.total_tokens,
      });
      expect(testAfter.usage[period].credits_used).toBe(0);
    }

    // Live traffic afterwards does not show under the test key.
    await gw
      .client(liveKey)
      .chat.completions.create({ model: 'sandbox/echo', messages: [{ role: 'user', content: 'paid' }] });
    expect((await credits(gw, testKey)).body.usage.daily.requests).toBe(1);
    expect((await credits(gw, liveKey)).body.usage.daily.requests).toBe(liveBefore.usage.daily.requests + 1);
  });

  it('daily_limit is present for the free plan and absent after PATCH daily_limit "none"', async () => {
    const { id, key } = await gw.account();
    expect((await credits(gw, key)).body.limits.daily_limit).toEqual({ credits: 5, remaining: 5 });
    const patched = await gw.admin('PATCH', `/admin/accounts/${id}`, { daily_limit: 'none' });
    expect(patched.status).toBe(200);
    const after = (await credits(gw, key)).body;
    expect(after.limits).not.toHaveProperty('daily_limit');
    expect(after.limits.rate_limit).toEqual({ requests_per_minute: 60, tokens_per_minute: 100_000 });
    // null returns to the plan's limit.
    await gw.admin('PATCH', `/admin/accounts/${id}`, { daily_limit: null });
    expect((await credits(gw, key)).body.limits.daily_limit).toEqual({ credits: 5, remaining: 5 });
  });

  it('refuses without a key, and with an unknown key', async () => {
    const none = await fetch(`${gw.url}/v1/credits`);
    expect(none.status).toBe(401);
    expect(((await none.json()) as any).error).toMatchObject({
      code: 'missing_api_key',
      message: 'No API key provided',
    });
    const unknown = await credits(gw, 'tg-live-abcdefghijklmnopqrstuvwxyzABCDEF');
    expect(unknown.status).toBe(401);
    expect(unknown.body.error).toMatchObject({ code: 'invalid_api_key', message: 'Invalid API key provided' });
  });
});
