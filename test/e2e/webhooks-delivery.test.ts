/**
 * Deliveries to real local receivers, on SQLite and PostgreSQL: llm.* and credit.low_balance events from real
 * chat requests, signatures, the retry schedule, dead letters and replay, timeouts, redirects.
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { verifyWebhook } from '../../src/webhooks/receiver/index.js';
import { DIALECTS } from '../support/databases.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { sleep, startReceiver, TEST_WEBHOOKS, type Receiver, type Respond } from '../webhooks/receiver-server.js';
import { describeEach } from '../support/backends.js';

const SECRET = 'receiver-secret-0123456789-0123456789';
const receivers: Receiver[] = [];

async function receiver(respond?: Respond): Promise<Receiver> {
  const r = await startReceiver(respond);
  receivers.push(r);
  return r;
}
afterAll(async () => Promise.all(receivers.map((r) => r.close())));

describeEach(DIALECTS)('webhook delivery on %s', (dialect) => {
  let gateway: TestGateway;
  beforeAll(async () => {
    // OpenAI points at a closed port: its models fail upstream (llm.error).
    gateway = await startGateway({
      dialect,
      env: { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' },
      overrides: { webhooks: TEST_WEBHOOKS },
    });
  });
  afterAll(async () => gateway?.close());

  async function register(key: string, body: Record<string, unknown>): Promise<string> {
    const response = await fetch(`${gateway.baseURL}/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ secret: SECRET, ...body }),
    });
    const json = (await response.json()) as any;
    if (response.status !== 201) throw new Error(JSON.stringify(json));
    return json.id;
  }
  const get = async (key: string, path: string) =>
    (await (await fetch(`${gateway.baseURL}${path}`, { headers: { authorization: `Bearer ${key}` } })).json()) as any;
  const post = async (key: string, path: string) => {
    const response = await fetch(`${gateway.baseURL}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
    });
    return { status: response.status, body: (await response.json()) as any };
  };
  const ask = (key: string, model = 'sandbox/echo', content = 'Hello webhooks') =>
    gateway.client(key).chat.completions.create({ model, max_tokens: 20, messages: [{ role: 'user', content }] });

  it('sends llm.completion signed per spec 6.2, with custom headers, only to matching filters', async () => {
    const r = await receiver();
    const account = await gateway.account();
    await register(account.key, {
      url: `${r.url}/all`,
      events: [{ type: 'llm.completion' }],
      headers: { 'X-Tenant': 'acme' },
    });
    await register(account.key, {
      url: `${r.url}/lorem-only`,
      events: [{ type: 'llm.completion', filters: { 'data.model': 'sandbox/lorem' } }],
    });
    const answer = await ask(account.key);

    const [delivery] = await r.waitFor(1, (x) => x.path === '/all');
    expect(delivery!.headers['content-type']).toBe('application/json');
    expect(delivery!.headers['x-webhook-algorithm']).toBe('sha256');
    expect(delivery!.headers['x-tenant']).toBe('acme');
    const timestamp = delivery!.headers['x-webhook-timestamp'] as string;
    expect(Math.abs(Number(timestamp) - Date.now() / 1000)).toBeLessThan(5);
    const independent = createHmac('sha256', SECRET).update(`${timestamp}.${delivery!.body}`).digest('hex');
    expect(delivery!.headers['x-webhook-signature']).toBe(independent);
    const verified = verifyWebhook(delivery!.body, delivery!.headers, SECRET);
    expect(verified.ok).toBe(true);
    const event = JSON.parse(delivery!.body);
    expect(event).toMatchObject({
      event: 'llm.completion',
      data: {
        model: 'sandbox/echo',
        prompt: 'Hello webhooks',
        completion: answer.choices[0]!.message.content,
        userId: account.id,
        tokens: {
          prompt: answer.usage!.prompt_tokens,
          completion: answer.usage!.completion_tokens,
          total: answer.usage!.total_tokens,
        },
      },
    });
    expect(event.data.requestId).toBeTruthy();
    expect(Date.parse(event.timestamp)).toBeGreaterThan(Date.now() - 10_000);

    await ask(account.key, 'sandbox/lorem');
    await r.waitFor(1, (x) => x.path === '/lorem-only');
    await sleep(200);
    expect(r.received.filter((x) => x.path === '/lorem-only')).toHaveLength(1);
    expect(r.received.filter((x) => x.path === '/all')).toHaveLength(2);
  });

  it('sends llm.error with the code and message the client got when the upstream fails', async () => {
    const r = await receiver();
    const account = await gateway.account();
    await register(account.key, { url: r.url, events: [{ type: 'llm.error' }, { type: 'llm.completion' }] });
    const failure = await fetch(`${gateway.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${account.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'gpt-6-luna',
        user: 'end-user-7',
        messages: [{ role: 'user', content: 'will fail' }],
      }),
    });
    const told = ((await failure.json()) as any).error;
    expect(failure.status).toBe(502);
    const [delivery] = await r.waitFor(1);
    expect(verifyWebhook(delivery!.body, delivery!.headers, SECRET).ok).toBe(true);
    expect(JSON.parse(delivery!.body)).toMatchObject({
      event: 'llm.error',
      data: {
        model: 'gpt-6-luna',
        userId: 'end-user-7',
        prompt: 'will fail',
        error: { code: told.code, message: told.message },
      },
    });
    await sleep(200);
    expect(r.received).toHaveLength(1);
  });

  it('sends llm.streaming.start, one llm.streaming.chunk per delta, llm.streaming.end, then llm.completion', async () => {
    const r = await receiver();
    const account = await gateway.account();
    const types = ['llm.streaming.start', 'llm.streaming.chunk', 'llm.streaming.end', 'llm.completion'];
    await register(account.key, { url: `${r.url}/explicit`, events: types.map((type) => ({ type })) });
    await register(account.key, { url: `${r.url}/wildcard`, events: [{ type: 'llm.*' }] });
    const stream = await gateway.client(account.key).chat.completions.create({
      model: 'sandbox/lorem',
      max_tokens: 12,
      stream: true,
      messages: [{ role: 'user', content: 'stream me' }],
    });
    let text = '';
    let deltas = 0;
    for await (const chunk of stream) {
      const content = chunk.choices[0]?.delta.content;
      if (content) {
        text += content;
        deltas++;
      }
    }
    expect(deltas).toBeGreaterThan(1);
    const explicit = (await r.waitFor(deltas + 3, (x) => x.path === '/explicit')).map((x) => JSON.parse(x.body));
    const byType = (type: string) => explicit.filter((e) => e.event === type);
    expect(byType('llm.streaming.start')).toHaveLength(1);
    const streamId = byType('llm.streaming.start')[0].data.streamId;
    const chunks = byType('llm.streaming.chunk').sort((a, b) => a.data.chunkIndex - b.data.chunkIndex);
    expect(chunks.map((c) => c.data.chunkIndex)).toEqual([...Array(deltas).keys()]);
    expect(chunks.map((c) => c.data.content).join('')).toBe(text);
    expect(chunks.every((c) => c.data.streamId === streamId)).toBe(true);
    expect(byType('llm.streaming.end')[0].data).toMatchObject({ streamId, totalChunks: deltas });
    expect(byType('llm.completion')[0].data).toMatchObject({
      completion: text,
      prompt: 'stream me',
      metadata: { stream: true },
    });
    // `llm.*` leaves out the per-chunk events.
    const wildcard = (await r.waitFor(3, (x) => x.path === '/wildcard')).map((x) => JSON.parse(x.body).event);
    await sleep(200);
    expect(
      r.received
        .filter((x) => x.path === '/wildcard')
        .map((x) => JSON.parse(x.body).event)
        .sort(),
    ).toEqual(['llm.completion', 'llm.streaming.end', 'llm.streaming.start']);
    expect(wildcard).not.toContain('llm.streaming.chunk');
  });

  it('retries 5xx, 429 and 408 with exponential backoff: 4 attempts at the configured spacing (+-20%)', async () => {
    const statuses = [503, 429, 408, 200];
    const r = await receiver((_x, i) => statuses[i] ?? 200);
    const account = await gateway.account();
    const id = await register(account.key, {
      url: r.url,
      events: [{ type: 'llm.completion' }],
      retryConfig: { maxAttempts: 4, initialDelay: 400, backoffMultiplier: 2, maxDelay: 5000 },
    });
    await ask(account.key);
    const attempts = await r.waitFor(4);
    const gaps = attempts.slice(1).map((a, i) => a.at - attempts[i]!.at);
    [400, 800, 1600].forEach((expected, i) => {
      expect(gaps[i]).toBeGreaterThanOrEqual(expected * 0.8);
      expect(gaps[i]).toBeLessThanOrEqual(expected * 1.2);
    });
    expect(new Set(attempts.map((a) => a.body)).size).toBe(1);
    await sleep(300);
    const deliveries = await get(account.key, `/webhooks/${id}/deliveries`);
    expect(deliveries.data).toHaveLength(1);
    expect(deliveries.data[0]).toMatchObject({ status: 'succeeded', attempts: 4, last_status: 200 });
    expect(r.received).toHaveLength(4);
  });

  it('sends a 400 straight to the dead letters after one attempt, and replays it on request', async () => {
    let accept = false;
    const r = await receiver(() => (accept ? 200 : 400));
    const account = await gateway.account();
    await register(account.key, {
      url: r.url,
      events: [{ type: 'llm.completion' }],
      retryConfig: { maxAttempts: 5, initialDelay: 100 },
    });
    await ask(account.key);
    await r.waitFor(1);
    let dead: any[] = [];
    for (let i = 0; i < 100 && dead.length === 0; i++) {
      await sleep(30);
      dead = (await get(account.key, '/webhooks/dead-letters')).data;
    }
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({ status: 'dead', attempts: 1, last_status: 400, event: 'llm.completion' });
    await sleep(300);
    expect(r.received).toHaveLength(1);
    // Another account sees none of it and cannot replay it.
    const other = await gateway.account();
    expect((await get(other.key, '/webhooks/dead-letters')).data).toEqual([]);
    expect((await post(other.key, `/webhooks/dead-letters/${dead[0].id}/replay`)).status).toBe(404);

    accept = true;
    const replay = await post(account.key, `/webhooks/dead-letters/${dead[0].id}/replay`);
    expect(replay.status).toBe(202);
    expect(replay.body).toMatchObject({ id: dead[0].id, status: 'pending', attempts: 0 });
    const [, second] = await r.waitFor(2);
    expect(JSON.parse(second!.body).id).toBe(dead[0].event_id);
    expect(verifyWebhook(second!.body, second!.headers, SECRET).ok).toBe(true);
    await sleep(200);
    expect((await get(account.key, '/webhooks/dead-letters')).data).toEqual([]);
    expect((await post(account.key, `/webhooks/dead-letters/${dead[0].id}/replay`)).status).toBe(400);
  });

  it('moves a delivery to the dead letters when its attempts are exhausted, and does not follow redirects', async () => {
    const r = await receiver((x) => (x.path === '/moved' ? 302 : 500));
    const account = await gateway.account();
    await register(account.key, {
      url: `${r.url}/down`,
      events: [{ type: 'llm.completion' }],
      retryConfig: { maxAttempts: 2, initialDelay: 100 },
    });
    await register(account.key, {
      url: `${r.url}/moved`,
      events: [{ type: 'llm.completion' }],
      retryConfig: { maxAttempts: 3, initialDelay: 100 },
    });
    await ask(account.key);
    await r.waitFor(2, (x) => x.path === '/down');
    let dead: any[] = [];
    for (let i = 0; i < 100 && dead.length < 2; i++) {
      await sleep(30);
      dead = (await get(account.key, '/webhooks/dead-letters')).data;
    }
    const down = dead.find((d) => d.last_status === 500);
    expect(down).toMatchObject({ attempts: 2 });
    expect(down.last_error).toMatch(/all 2 attempts failed/);
    expect(dead.find((d) => d.last_status === 302)).toMatchObject({ attempts: 1 });
    expect(r.received.filter((x) => x.path === '/moved')).toHaveLength(1);
  });

  it('gives up on a receiver that never answers after `timeout`', async () => {
    const r = await receiver(() => 'hang');
    const account = await gateway.account();
    await register(account.key, {
      url: r.url,
      events: [{ type: 'llm.completion' }],
      timeout: 1000,
      retryConfig: { maxAttempts: 1 },
    });
    await ask(account.key);
    const [attempt] = await r.waitFor(1);
    let dead: any[] = [];
    for (let i = 0; i < 100 && dead.length === 0; i++) {
      await sleep(50);
      dead = (await get(account.key, '/webhooks/dead-letters')).data;
    }
    expect(dead[0].last_error).toMatch(/timeout/);
    expect(attempt!.closedAt).toBeDefined();
    const waited = attempt!.closedAt! - attempt!.at;
    expect(waited).toBeGreaterThanOrEqual(900);
    expect(waited).toBeLessThan(1600);
  });

  it('fires exactly one credit.low_balance per crossing of 1 USD, naming the key, and again after a top-up', async () => {
    const r = await receiver();
    const account = await gateway.account();
    const spender = await gateway.key(account.id);
    await register(account.key, { url: r.url, events: [{ type: 'credit.low_balance' }] });
    await gateway.setBalance(account.id, 1.000001);
    await ask(spender.key, 'sandbox/lorem');
    const [first] = await r.waitFor(1);
    const event = JSON.parse(first!.body);
    expect(verifyWebhook(first!.body, first!.headers, SECRET).ok).toBe(true);
    expect(event).toMatchObject({
      type: 'credit.low_balance',
      event: 'credit.low_balance',
      data: { threshold: 1, api_key_id: spender.id, account_id: account.id, balance: { currency: 'USD' } },
    });
    expect(event.data.balance.credits).toBeLessThan(1);
    expect(Number.isInteger(event.created)).toBe(true);
    await ask(spender.key, 'sandbox/lorem');
    await sleep(400);
    expect(r.received).toHaveLength(1);

    await gateway.setBalance(account.id, 1.000001);
    await ask(account.key, 'sandbox/lorem');
    const [, second] = await r.waitFor(2);
    expect(JSON.parse(second!.body).data.api_key_id).not.toBe(spender.id);
    await sleep(300);
    expect(r.received).toHaveLength(2);
  });
});
