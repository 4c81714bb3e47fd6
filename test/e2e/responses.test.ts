/**
 * POST /v1/responses end to end, on both stores: a model served by OpenAI passes through natively to a local
 * server speaking OpenAI's Responses format (JSON and typed SSE events), metered from its usage; a model served
 * elsewhere is translated through chat. `previous_response_id` is bound to the account that got the id. Fallback
 * `models` and `timeout_ms` on both paths, never sent upstream. Money under 100 concurrent requests at an account
 * that can pay for about 20.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEach } from '../support/backends.js';
import { DIALECTS } from '../support/databases.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.js';

const nano = (usd: number) => Math.round(usd * 1e9);
/** gpt-6-luna: 0.0001 USD per 1,000 input tokens, 0.0005 per 1,000 output tokens (nano-USD per token: 100, 500). */
const lunaCost = (input: number, output: number) => Math.ceil((input * 100_000 + output * 500_000) / 1000);

interface Reply {
  status: number;
  headers: Headers;
  body: any;
  events: Array<{ event: string; data: any }>;
}

describeEach(DIALECTS)('POST /v1/responses on %s', (dialect) => {
  let gateway: TestGateway;
  let openai: MockOpenAI;
  let mistral: MockOpenAI;

  beforeAll(async () => {
    openai = await startMockOpenAI({ apiKey: 'sk-e2e' });
    mistral = await startMockOpenAI();
    gateway = await startGateway({
      dialect,
      env: {
        OPENAI_API_KEY: 'sk-e2e',
        OPENAI_BASE_URL: openai.url,
        MISTRAL_API_KEY: 'mk-e2e',
        MISTRAL_BASE_URL: mistral.url,
      },
    });
  });
  afterAll(async () => {
    await gateway?.close();
    await Promise.all([openai?.close(), mistral?.close()]);
  });

  async function respond(key: string, body: unknown): Promise<Reply> {
    const response = await fetch(`${gateway.baseURL}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    const streamed = response.headers.get('content-type')?.startsWith('text/event-stream');
    const events = streamed
      ? text
          .split('\n\n')
          .filter(Boolean)
          .map((block) => {
            const [head, data] = block.split('\n');
            return { event: head!.slice('event: '.length), data: JSON.parse(data!.slice('data: '.length)) };
          })
      : [];
    return {
      status: response.status,
      headers: response.headers,
      body: streamed ? undefined : JSON.parse(text),
      events,
    };
  }

  async function balance(accountId: string): Promise<number> {
    const { body } = await gateway.admin('GET', `/admin/accounts/${accountId}`);
    return nano(body.balance.credits);
  }

  it('passes a request for an OpenAI model through to /v1/responses and bills its usage exactly', async () => {
    const account = await gateway.account();
    const before = await balance(account.id);
    const request = { model: 'gpt-6-luna', input: 'Say hello', instructions: 'Be brief', web_search_hint: 1 };
    const { status, headers, body } = await respond(account.key, request);
    expect(status).toBe(200);
    expect(headers.get('x-tollgate-provider')).toBe('openai');
    const sent = openai.requests.at(-1)!;
    expect(sent.path).toBe('/v1/responses');
    // Unknown fields pass through to OpenAI untouched.
    expect(sent.body).toMatchObject({ ...request, stream: false });
    expect(body).toMatchObject({ object: 'response', status: 'completed', model: 'gpt-6-luna' });
    expect(body.id).toMatch(/^resp_/);
    expect(body.output[0].content[0].text).toBe('Hello from the mock upstream.');
    const { input_tokens: input, output_tokens: output } = body.usage;
    expect(output).toBe(5);
    expect(nano(body.usage.cost)).toBe(lunaCost(input, output));
    expect(before - (await balance(account.id))).toBe(lunaCost(input, output));
  });

  it('relays the native stream event by event and settles before response.completed', async () => {
    const account = await gateway.account();
    const before = await balance(account.id);
    const { status, events } = await respond(account.key, { model: 'gpt-6-luna', input: 'Stream it', stream: true });
    expect(status).toBe(200);
    expect(events.map((e) => e.event)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      ...Array<string>(5).fill('response.output_text.delta'),
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events.map((e) => e.data.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events[0]!.data.response.model).toBe('gpt-6-luna');
    const { usage } = events.at(-1)!.data.response;
    expect(nano(usage.cost)).toBe(lunaCost(usage.input_tokens, usage.output_tokens));
    expect(before - (await balance(account.id))).toBe(nano(usage.cost));
  });

  it('a balance that cannot pay for the whole output lowers max_output_tokens, and says so', async () => {
    const account = await gateway.account();
    await gateway.setBalance(account.id, 0.001);
    const { status, headers } = await respond(account.key, { model: 'gpt-6-luna', input: 'Write a lot' });
    expect(status).toBe(200);
    const lowered = Number(headers.get('x-tollgate-max-tokens-lowered'));
    expect(lowered).toBeGreaterThan(0);
    expect(lowered).toBeLessThan(2_000);
    expect(openai.requests.at(-1)!.body.max_output_tokens).toBe(lowered);
  });

  it("an upstream's refusal is the client's error and charges nothing", async () => {
    const account = await gateway.account();
    const before = await balance(account.id);
    openai.enqueue({ kind: 'error', status: 400, message: 'Unsupported parameter' });
    const { status, body } = await respond(account.key, { model: 'gpt-6-luna', input: 'x' });
    expect(status).toBe(400);
    expect(body.error.message).toContain('Unsupported parameter');
    expect(await balance(account.id)).toBe(before);
  });

  it('a native stream that fails midway ends with an error event and charges what was delivered', async () => {
    const account = await gateway.account();
    const before = await balance(account.id);
    openai.enqueue({ kind: 'stream-error', afterChunks: 2, message: 'overloaded' });
    const { status, events } = await respond(account.key, { model: 'gpt-6-luna', input: 'x', stream: true });
    expect(status).toBe(200);
    expect(events.filter((e) => e.event === 'response.output_text.delta')).toHaveLength(2);
    expect(events.at(-1)).toMatchObject({ event: 'error', data: { type: 'error', code: 'upstream_error' } });
    expect(events.some((e) => e.event === 'response.completed')).toBe(false);
    const charged = before - (await balance(account.id));
    expect(charged).toBeGreaterThan(0);
  });

  it('a client that goes away mid-stream is charged for what was delivered, and the upstream is closed', async () => {
    const account = await gateway.account();
    const before = await balance(account.id);
    openai.enqueue({ kind: 'ok', content: 'one two three four five six seven eight', delayMs: 150 });
    const controller = new AbortController();
    const response = await fetch(`${gateway.baseURL}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${account.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-6-luna', input: 'Count slowly', stream: true }),
      signal: controller.signal,
    });
    const reader = response.body!.getReader();
    let text = '';
    while (!text.includes('response.output_text.delta')) text += new TextDecoder().decode((await reader.read()).value);
    controller.abort();
    const upstream = openai.requests.at(-1)!;
    await expect.poll(() => upstream.closedAt, { timeout: 3_000 }).toBeDefined();
    expect(upstream.completed).toBe(false);
    await expect.poll(async () => before - (await balance(account.id)), { timeout: 3_000 }).toBeGreaterThan(0);
    const charged = before - (await balance(account.id));
    // The prompt's estimate and the word or two delivered: less than the whole answer's 8 output tokens alone.
    expect(charged).toBeLessThan(lunaCost(0, 8));
  });

  it('a translated stream that fails midway ends with response.failed', async () => {
    const account = await gateway.account();
    mistral.enqueue({ kind: 'stream-error', afterChunks: 2, message: 'overloaded' });
    const { events } = await respond(account.key, { model: 'mistral-small-2603', input: 'x', stream: true });
    expect(events.at(-1)).toMatchObject({ event: 'response.failed', data: { response: { status: 'failed' } } });
  });

  it('`models` and `timeout_ms` are taken on the native path and never sent to OpenAI', async () => {
    const account = await gateway.account();
    const { status, headers } = await respond(account.key, {
      model: 'gpt-6-luna',
      input: 'x',
      models: ['gpt-6.1-terra'],
      timeout_ms: 5_000,
    });
    expect(status).toBe(200);
    expect(headers.get('x-tollgate-provider')).toBe('openai');
    const sent = openai.requests.at(-1)!;
    expect(sent.path).toBe('/v1/responses');
    expect(sent.body).toMatchObject({ model: 'gpt-6-luna', input: 'x' });
    expect(sent.body).not.toHaveProperty('models');
    expect(sent.body).not.toHaveProperty('timeout_ms');
  });

  it('`timeout_ms` bounds a request passed through to OpenAI: 504 after about that long, charged nothing', async () => {
    const account = await gateway.account();
    const before = await balance(account.id);
    openai.enqueue({ kind: 'hang' });
    const started = Date.now();
    const { status, body } = await respond(account.key, { model: 'gpt-6-luna', input: 'x', timeout_ms: 300 });
    const elapsed = Date.now() - started;
    expect([status, body.error.code]).toEqual([504, 'upstream_timeout']);
    expect(openai.requests.at(-1)!.path).toBe('/v1/responses');
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(1_500);
    expect(await balance(account.id)).toBe(before);
  });

  it('a fallback in `models` answers when the model fails (translated through chat), named and billed at its price', async () => {
    const account = await gateway.account();
    const before = await balance(account.id);
    // Mistral fails on both attempts (retries: 1); a route that mixes providers is translated for all.
    mistral.enqueue({ kind: 'error', status: 503 }, { kind: 'error', status: 503 });
    const { status, headers, body } = await respond(account.key, {
      model: 'mistral-small-2603',
      input: 'Hi',
      models: ['gpt-6-luna'],
      timeout_ms: 5_000,
    });
    expect(status).toBe(200);
    expect(headers.get('x-tollgate-provider')).toBe('openai');
    expect(body.model).toBe('gpt-6-luna');
    const { input_tokens: input, output_tokens: output } = body.usage;
    expect(nano(body.usage.cost)).toBe(lunaCost(input, output));
    expect(before - (await balance(account.id))).toBe(lunaCost(input, output));
    for (const sent of [mistral.requests.at(-1)!, openai.requests.at(-1)!]) {
      expect(sent.path).toBe('/v1/chat/completions');
      expect(sent.body).not.toHaveProperty('models');
      expect(sent.body).not.toHaveProperty('timeout_ms');
    }
  });

  it('`timeout_ms` bounds a translated request (504); an unknown fallback is 404 naming `models`', async () => {
    const account = await gateway.account();
    const before = await balance(account.id);
    mistral.enqueue({ kind: 'hang' });
    const started = Date.now();
    const slow = await respond(account.key, { model: 'mistral-small-2603', input: 'x', timeout_ms: 300 });
    expect([slow.status, slow.body.error.code]).toEqual([504, 'upstream_timeout']);
    expect(Date.now() - started).toBeLessThan(1_500);
    expect(await balance(account.id)).toBe(before);
    const unknown = await respond(account.key, { model: 'gpt-6-luna', input: 'x', models: ['no-such-model'] });
    expect([unknown.status, unknown.body.error.code, unknown.body.error.param]).toEqual([
      404,
      'model_not_found',
      'models',
    ]);
  });

  it('an Idempotency-Key replays a completed stream, charged once', async () => {
    const account = await gateway.account();
    const before = await balance(account.id);
    const send = async () => {
      const response = await fetch(`${gateway.baseURL}/responses`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${account.key}`,
          'content-type': 'application/json',
          'idempotency-key': 'responses-replay-1',
        },
        body: JSON.stringify({ model: 'gpt-6-luna', input: 'Once', stream: true }),
      });
      return { replayed: response.headers.get('idempotent-replayed'), text: await response.text() };
    };
    const first = await send();
    const second = await send();
    expect(second).toEqual({ replayed: 'true', text: first.text });
    const completed = JSON.parse(first.text.trimEnd().split('\n').at(-1)!.slice('data: '.length));
    expect(completed.type).toBe('response.completed');
    expect(before - (await balance(account.id))).toBe(nano(completed.response.usage.cost));
  });

  it('previous_response_id: the own id goes to the provider that holds it; another account gets 404 and nothing is sent', async () => {
    const owner = await gateway.account();
    const first = await respond(owner.key, { model: 'gpt-6-luna', input: 'Remember 7' });
    expect(first.status).toBe(200);
    const next = await respond(owner.key, {
      model: 'gpt-6-luna',
      input: 'What number?',
      previous_response_id: first.body.id,
    });
    expect(next.status).toBe(200);
    expect(openai.requests.at(-1)!.body.previous_response_id).toBe(first.body.id);

    const stranger = await gateway.account();
    const sent = openai.requests.length;
    const stolen = await respond(stranger.key, {
      model: 'gpt-6-luna',
      input: 'x',
      previous_response_id: first.body.id,
    });
    const unknown = await respond(stranger.key, { model: 'gpt-6-luna', input: 'x', previous_response_id: 'resp_nope' });
    expect([stolen.status, unknown.status]).toEqual([404, 404]);
    expect(stolen.body.error).toEqual({ ...unknown.body.error, message: stolen.body.error.message });
    expect(stolen.body.error).toMatchObject({ code: 'not_found', param: 'previous_response_id' });
    expect(openai.requests.length).toBe(sent);
  });

  it('previous_response_id of a translated answer, a stored-nothing answer or a test key is 400 and says why', async () => {
    const account = await gateway.account();
    const translated = await respond(account.key, { model: 'mistral-small-2603', input: 'Hi' });
    expect(translated.status).toBe(200);
    expect(mistral.requests.at(-1)!.path).toBe('/v1/chat/completions');
    const again = await respond(account.key, {
      model: 'mistral-small-2603',
      input: 'And?',
      previous_response_id: translated.body.id,
    });
    expect(again.status).toBe(400);
    expect(again.body.error.message).toContain('does not keep responses');

    const unstored = await respond(account.key, { model: 'gpt-6-luna', input: 'Hi', store: false });
    const continued = await respond(account.key, {
      model: 'gpt-6-luna',
      input: 'x',
      previous_response_id: unstored.body.id,
    });
    expect(continued.status).toBe(404);

    const native = await respond(account.key, { model: 'gpt-6-luna', input: 'Hi' });
    const testKey = await gateway.key(account.id, { environment: 'test' });
    const sandboxed = await respond(testKey.key, {
      model: 'gpt-6-luna',
      input: 'x',
      previous_response_id: native.body.id,
    });
    expect(sandboxed.status).toBe(400);
    expect(sandboxed.body.error.message).toContain('sandbox');
  });

  it('the response store finds an id only for the account it was recorded for, and keeps its first record', async () => {
    const { responses } = gateway.app.storage;
    const [a, b] = [await gateway.account(), await gateway.account()];
    const now = Date.now();
    await responses.record({ id: 'resp_store_1', accountId: a.id, providerId: 'openai', stateful: true, now });
    await responses.record({ id: 'resp_store_1', accountId: b.id, providerId: 'mistral', stateful: false, now });
    expect(await responses.find(a.id, 'resp_store_1')).toEqual({ providerId: 'openai', stateful: true });
    expect(await responses.find(b.id, 'resp_store_1')).toBeUndefined();
    expect(await responses.find(a.id, 'resp_store_2')).toBeUndefined();
    // Kept as long as OpenAI keeps a response; older ids are forgotten, and then unknown (404).
    await responses.record({
      id: 'resp_store_old',
      accountId: a.id,
      providerId: 'openai',
      stateful: true,
      now: now - 1,
    });
    expect(await responses.deleteCreatedBefore(now)).toBeGreaterThanOrEqual(1);
    expect(await responses.find(a.id, 'resp_store_old')).toBeUndefined();
    expect(await responses.find(a.id, 'resp_store_1')).toEqual({ providerId: 'openai', stateful: true });
  });

  it('100 concurrent mixed requests at an account that can pay for about 20: balance = ledger sum, never below 0', async () => {
    const account = await gateway.account({ plan: 'pay_as_you_go' });
    // Each request holds its prompt and 2 output tokens, and is billed about 1,500 nano-USD (a little more for
    // mistral): 0.00003 USD pays for about 20.
    const startNano = 30_000;
    await gateway.setBalance(account.id, startNano / 1e9);
    const outcomes = await Promise.all(
      Array.from({ length: 100 }, async (_, i) => {
        const model = i % 3 === 2 ? 'mistral-small-2603' : 'gpt-6-luna';
        const reply = await respond(account.key, {
          model,
          input: `request ${i}`,
          stream: i % 2 === 0,
          max_output_tokens: 2,
        });
        const final = reply.events.at(-1)?.data;
        const cost = reply.body?.usage?.cost ?? final?.response?.usage?.cost ?? 0;
        return { status: reply.status, code: reply.body?.error?.code, cost: nano(cost), final: final?.type };
      }),
    );
    const ok = outcomes.filter((o) => o.status === 200);
    const refused = outcomes.filter((o) => o.status !== 200);
    expect(ok.length).toBeGreaterThan(5);
    expect(refused.length).toBeGreaterThan(5);
    for (const r of refused) expect([r.status, r.code]).toEqual([402, 'insufficient_credits']);

    const balanceNano = await balance(account.id);
    expect(balanceNano).toBeGreaterThanOrEqual(0);
    const { body: ledger } = await gateway.admin('GET', `/admin/accounts/${account.id}/ledger?limit=500`);
    const entries = ledger.data as Array<{ kind: string; amount: number }>;
    expect(entries.reduce((sum, e) => sum + nano(e.amount), 0)).toBe(balanceNano);
    const debits = -entries.filter((e) => e.kind === 'debit').reduce((sum, e) => sum + nano(e.amount), 0);
    expect(ok.reduce((sum, o) => sum + o.cost, 0)).toBe(debits);
    expect(startNano - balanceNano).toBe(debits);
  });
});
