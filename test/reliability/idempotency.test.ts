/**
 * Idempotency-Key on chat requests, through the openai SDK on SQLite and PostgreSQL: a retry gets the first
 * answer and is charged once; a duplicate while the first runs gets 409 (which the SDK retries by itself until
 * the answer is there); a reuse with another body gets 422; failures free the key; streams replay; keys expire
 * after 24 h and a lapsed claim can be taken over.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IDEMPOTENCY_TTL_MS, Idempotency } from '../../src/gateway/index.js';
import { DIALECTS } from '../support/databases.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.js';
import { describeEach } from '../support/backends.js';
import { fakeKey } from '../gateway/fakes.js';

/** The SDK's own retries reuse one generated key per call (`stainless-node-retry-<uuid>`) once this is set. */
class IdempotentOpenAI extends OpenAI {
  protected override idempotencyHeader = 'Idempotency-Key';
}

const MESSAGES = [{ role: 'user' as const, content: 'Say something memorable.' }];

describeEach(DIALECTS)('Idempotency-Key on %s', (dialect) => {
  let gateway: TestGateway;
  let upstream: MockOpenAI;

  beforeAll(async () => {
    upstream = await startMockOpenAI({ behavior: { kind: 'ok', content: 'A memorable answer of several words.' } });
    gateway = await startGateway({ dialect, env: { OPENAI_API_KEY: 'sk-upstream', OPENAI_BASE_URL: upstream.url } });
  });
  afterAll(async () => {
    await gateway?.close();
    await upstream?.close();
  });

  async function debits(accountId: string): Promise<number> {
    const { body } = await gateway.admin('GET', `/admin/accounts/${accountId}/ledger?limit=500`);
    return body.data.filter((e: { kind: string }) => e.kind === 'debit').length;
  }
  const balance = async (accountId: string) =>
    (await gateway.admin('GET', `/admin/accounts/${accountId}`)).body.balance.credits as number;

  it('returns the first answer to a retry and charges once', async () => {
    const { id, key } = await gateway.account();
    const client = gateway.client(key);
    const options = { headers: { 'Idempotency-Key': `order-${id}` } };
    const first = await client.chat.completions
      .create({ model: 'gpt-6-luna', messages: MESSAGES, max_tokens: 30 }, options)
      .withResponse();
    const after = await balance(id);
    const again = await client.chat.completions
      .create({ model: 'gpt-6-luna', messages: MESSAGES, max_tokens: 30 }, options)
      .withResponse();
    expect(again.data).toEqual(first.data);
    expect(again.response.headers.get('idempotent-replayed')).toBe('true');
    expect(first.response.headers.get('idempotent-replayed')).toBeNull();
    expect(await balance(id)).toBe(after);
    expect(await debits(id)).toBe(1);
    expect((first.data.usage as { cost?: number }).cost).toBeGreaterThan(0);
  });

  it('makes a concurrent duplicate wait (409, retried by the SDK) and answers both alike, charged once', async () => {
    const { id, key } = await gateway.account();
    upstream.enqueue({ kind: 'ok', content: 'Slow but sure.', latencyMs: 700 });
    const patient = gateway.client(key, { maxRetries: 4 });
    const options = { headers: { 'Idempotency-Key': 'same-key-twice' } };
    const started = upstream.requests.length;
    const [a, b] = await Promise.all([
      patient.chat.completions.create({ model: 'gpt-6-luna', messages: MESSAGES }, options),
      new Promise((r) => setTimeout(r, 100)).then(() =>
        patient.chat.completions.create({ model: 'gpt-6-luna', messages: MESSAGES }, options),
      ),
    ]);
    expect(b).toEqual(a);
    expect(upstream.requests.length - started).toBe(1);
    expect(await debits(id)).toBe(1);

    const impatient = gateway.client(key, { maxRetries: 0 });
    upstream.enqueue({ kind: 'ok', content: 'Slow again.', latencyMs: 500 });
    const first = impatient.chat.completions.create(
      { model: 'gpt-6-luna', messages: MESSAGES },
      { headers: { 'Idempotency-Key': 'k2' } },
    );
    await new Promise((r) => setTimeout(r, 100));
    const error = await impatient.chat.completions
      .create({ model: 'gpt-6-luna', messages: MESSAGES }, { headers: { 'Idempotency-Key': 'k2' } })
      .catch((e) => e);
    expect(error).toBeInstanceOf(OpenAI.ConflictError);
    expect(error.status).toBe(409);
    expect(error.error).toMatchObject({
      type: 'invalid_request_error',
      code: 'idempotency_key_in_use',
      param: 'Idempotency-Key',
    });
    expect(error.headers.get('retry-after')).toBe('1');
    await first;
  });

  it('refuses a key reused with a different body (422) and a malformed key (400)', async () => {
    const { key } = await gateway.account();
    const client = gateway.client(key);
    await client.chat.completions.create(
      { model: 'sandbox/echo', messages: MESSAGES },
      { headers: { 'Idempotency-Key': 'k-body' } },
    );
    const reused = await client.chat.completions
      .create(
        { model: 'sandbox/echo', messages: [{ role: 'user', content: 'other' }] },
        { headers: { 'Idempotency-Key': 'k-body' } },
      )
      .catch((e) => e);
    expect(reused.status).toBe(422);
    expect(reused.error).toMatchObject({ code: 'idempotency_key_reused', param: 'Idempotency-Key' });
    const bad = await client.chat.completions
      .create({ model: 'sandbox/echo', messages: MESSAGES }, { headers: { 'Idempotency-Key': 'x'.repeat(256) } })
      .catch((e) => e);
    expect(bad.status).toBe(400);
    expect(bad.error).toMatchObject({ code: 'invalid_request', param: 'Idempotency-Key' });
    // Same body with its fields in another order is the same request.
    const response = await fetch(`${gateway.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'idempotency-key': 'k-body' },
      body: JSON.stringify({ messages: MESSAGES, model: 'sandbox/echo' }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('idempotent-replayed')).toBe('true');
  });

  it("replays nothing to a key that may not make the request (the key's permissions are checked first)", async () => {
    const { id, key } = await gateway.account();
    const options = { headers: { 'Idempotency-Key': 'shared' } };
    const body = { model: 'sandbox/lorem', messages: MESSAGES };
    await gateway.client(key).chat.completions.create(body, options);
    const project = await gateway.key(id, { permissions: 'project', models: ['sandbox/echo'] });
    const refused = await gateway
      .client(project.key)
      .chat.completions.create(body, options)
      .catch((e) => e);
    expect(refused.status).toBe(403);
    const readOnly = await gateway.key(id, { permissions: 'read_only' });
    expect(
      (
        await gateway
          .client(readOnly.key)
          .chat.completions.create(body, options)
          .catch((e) => e)
      ).status,
    ).toBe(403);
  });

  it('keeps no failed answer: a request refused for credit runs again after a top-up', async () => {
    const { id, key } = await gateway.account();
    await gateway.setBalance(id, 0);
    const client = gateway.client(key);
    const options = { headers: { 'Idempotency-Key': 'after-topup' } };
    const refused = await client.chat.completions
      .create({ model: 'gpt-6-luna', messages: MESSAGES }, options)
      .catch((e) => e);
    expect(refused.status).toBe(402);
    await gateway.setBalance(id, 1);
    const paid = await client.chat.completions.create({ model: 'gpt-6-luna', messages: MESSAGES }, options);
    expect(paid.choices[0]!.message.content).toBeTruthy();
    expect(await debits(id)).toBe(1);
  });

  it('replays a finished stream event for event, charged once', async () => {
    const { id, key } = await gateway.account();
    const client = gateway.client(key);
    const read = async () => {
      const stream = await client.chat.completions.create(
        { model: 'gpt-6-luna', messages: MESSAGES, stream: true, stream_options: { include_usage: true } },
        { headers: { 'Idempotency-Key': 'stream-1' } },
      );
      const chunks = [];
      for await (const chunk of stream) chunks.push(chunk);
      return chunks;
    };
    const first = await read();
    const again = await read();
    expect(again).toEqual(first);
    expect((first.at(-1)!.usage as { cost?: number }).cost).toBeGreaterThan(0);
    expect(await debits(id)).toBe(1);
  });

  it("reuses the SDK's own retry key across its retries", async () => {
    const { id, key } = await gateway.account();
    upstream.enqueue({ kind: 'ok', content: 'Late.', latencyMs: 600 });
    // The first attempt times out on the client; the SDK retries with the same generated key.
    const client = new IdempotentOpenAI({ apiKey: key, baseURL: gateway.baseURL, maxRetries: 4, timeout: 300 });
    const answer = await client.chat.completions.create({ model: 'gpt-6-luna', messages: MESSAGES });
    expect(answer.choices[0]!.message.content).toBeTruthy();
    const keys = upstream.requests.slice(-2).map((r) => r.headers['idempotency-key']);
    expect(keys.every((k) => k === undefined)).toBe(true); // the header is the gateway's, never sent upstream
    expect(await debits(id)).toBeLessThanOrEqual(1);
  });
});

describe('idempotency keys over time (store on SQLite, clock controlled)', () => {
  let gateway: TestGateway;
  beforeAll(async () => {
    gateway = await startGateway();
  });
  afterAll(async () => {
    await gateway?.close();
  });

  it('expires answers after 24 h and lets a lapsed claim be taken over', async () => {
    const { id } = await gateway.account();
    let now = Date.now();
    const idempotency = new Idempotency({ store: gateway.app.storage.idempotency, leaseMs: 120_000, now: () => now });
    const key = fakeKey({ id: 'key_idempotency', accountId: id, name: 'idempotency', createdAt: now });
    let runs = 0;
    type Body = { id: string };
    const answer = (): Promise<{ kind: 'json'; headers: Record<string, string>; body: Body }> =>
      Promise.resolve({ kind: 'json', headers: {}, body: { id: `answer-${++runs}` } });
    const call = () =>
      idempotency.run(key, { idempotencyKey: 'daily', body: { a: 1 }, requestId: `req_${runs}` }, answer);
    expect(await call()).toMatchObject({ body: { id: 'answer-1' } });
    now += IDEMPOTENCY_TTL_MS - 1_000;
    expect(await call()).toMatchObject({ body: { id: 'answer-1' }, headers: { 'idempotent-replayed': 'true' } });
    now += 2_000;
    expect(await call()).toMatchObject({ body: { id: 'answer-2' } });

    // A claim whose request never finished (its process died) holds the key for the lease, then frees it.
    let hang: () => void = () => undefined;
    const stuck = idempotency.run<Body>(
      key,
      { idempotencyKey: 'crashed', body: {}, requestId: 'req_x' },
      () => new Promise((resolve) => (hang = () => resolve({ kind: 'json', headers: {}, body: { id: 'late' } }))),
    );
    await new Promise((r) => setTimeout(r, 20));
    await expect(
      idempotency.run(key, { idempotencyKey: 'crashed', body: {}, requestId: 'req_y' }, answer),
    ).rejects.toMatchObject({
      code: 'idempotency_key_in_use',
    });
    now += 120_001;
    expect(
      await idempotency.run(key, { idempotencyKey: 'crashed', body: {}, requestId: 'req_z' }, answer),
    ).toMatchObject({ body: { id: 'answer-3' } });
    hang();
    await stuck;
    // The late finisher lost its claim and did not overwrite the answer of the request that took over.
    expect(
      await idempotency.run(key, { idempotencyKey: 'crashed', body: {}, requestId: 'req_w' }, answer),
    ).toMatchObject({ body: { id: 'answer-3' } });
  });
});
