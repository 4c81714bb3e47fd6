/**
 * GET /v1/openapi.json: a valid OpenAPI 3.1 document whose schemas match what the gateway really sends and
 * accepts, and whose paths all exist.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderReference } from '../../src/api/index.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { apiCall } from '../support/admin-call.js';
import { startMockStripe, type MockStripe } from '../support/mock-stripe.js';
import { startWithNativeProviders, type NativeProviders } from '../support/native-providers.js';

let gateway: TestGateway;
let stripe: MockStripe;
let doc: any;
let key: string;
let accountId: string;
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });

/** Asserts `value` matches `#/components/schemas/<name>` of the served document. */
function expectMatches(name: string, value: unknown): void {
  const check = ajv.getSchema(`openapi.json#/components/schemas/${name}`)!;
  const ok = check(value);
  expect(ok, `${name}: ${JSON.stringify(check.errors)}\n${JSON.stringify(value)}`).toBe(true);
}

/**
 * The document's own schema for an answer of `method path`: the `status` answer's JSON, or (with `event`) one event
 * of its stream (`x-event-schema`).
 */
function answerSchema(method: string, path: string, status: number, event = false) {
  const content = event ? ['text/event-stream', 'x-event-schema'] : ['application/json', 'schema'];
  const pointer = ['paths', path, method.toLowerCase(), 'responses', String(status), 'content', ...content]
    .map((part) => part.replace(/~/g, '~0').replace(/\//g, '~1'))
    .join('/');
  const check = ajv.getSchema(`openapi.json#/${pointer}`);
  expect(check, `no schema at ${pointer}`).toBeDefined();
  return check!;
}

/** Asserts `value` matches the document's own schema for the `status` answer (or a stream event) of `method path`. */
function expectAnswerMatches(method: string, path: string, status: number, value: unknown, event = false): void {
  const check = answerSchema(method, path, status, event);
  const ok = check(value);
  expect(ok, `${method} ${path} ${status}: ${JSON.stringify(check.errors)}\n${JSON.stringify(value)}`).toBe(true);
}

/**
 * Resolves a `#/components/schemas/...` reference of the document; of a union (a nullable included), the object
 * variant whose required fields `value` has.
 */
function resolve(schema: any, value?: unknown): any {
  if (schema?.$ref) return resolve(doc.components.schemas[String(schema.$ref).split('/').at(-1)!], value);
  if (schema?.anyOf) {
    const objects = schema.anyOf.map((variant: any) => resolve(variant, value)).filter((v: any) => v?.properties);
    const has = (field: string) => value !== null && typeof value === 'object' && field in value;
    return objects.find((variant: any) => (variant.required ?? []).every(has)) ?? objects[0];
  }
  return schema;
}

/** The fields of `value` its schema does not name (the schemas are open: a real answer must not need that). */
function undocumented(schema: any, value: unknown, where = '$'): string[] {
  const resolved = resolve(schema, value);
  if (!resolved || value === null || typeof value !== 'object') return [];
  if (Array.isArray(value))
    return resolved.items ? value.flatMap((item, i) => undocumented(resolved.items, item, `${where}[${i}]`)) : [];
  if (!resolved.properties) return [];
  return Object.entries(value).flatMap(([field, item]) =>
    field in resolved.properties
      ? undocumented(resolved.properties[field], item, `${where}.${field}`)
      : [`${where}.${field}`],
  );
}

/**
 * Asserts a live answer has the status and matches the schema the document gives for it, naming every field it
 * carries; returns its body.
 */
function expectAnswer(method: string, path: string, status: number, answer: { status: number; body: any }): any {
  expect(answer.status, `${method} ${path}: ${JSON.stringify(answer.body)}`).toBe(status);
  expectAnswerMatches(method, path, status, answer.body);
  const schema = doc.paths[path][method.toLowerCase()].responses[String(status)].content['application/json'].schema;
  expect(undocumented(schema, answer.body), `${method} ${path} ${status}: fields the document does not name`).toEqual(
    [],
  );
  return answer.body;
}

/** The data of each event of an event stream. */
const streamEvents = (text: string): string[] =>
  text
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => line.slice(6));

const call = (method: string, path: string, body?: unknown, auth = key) =>
  apiCall(gateway.url, auth, method, path, body);

beforeAll(async () => {
  stripe = await startMockStripe();
  gateway = await startGateway({ env: stripe.env, overrides: { webhooks: { allow_private_urls: true } } });
  ({ id: accountId, key } = await gateway.account());
  const response = await fetch(`${gateway.url}/v1/openapi.json`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  doc = await response.json();
  ajv.addSchema(doc, 'openapi.json');
});
afterAll(async () => {
  await gateway?.close();
  await stripe?.close();
});

describe('GET /v1/openapi.json', () => {
  it('is served without a key and is a valid OpenAPI 3.1 document', async () => {
    expect(doc.openapi).toBe('3.1.0');
    const result = await new Validator().validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('documents the request schema the gateway validates: a request it accepts matches, one it refuses does not', async () => {
    const request = {
      model: 'sandbox/echo',
      messages: [{ role: 'user', content: 'hi' }],
      temperature: 0.5,
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
    };
    expectMatches('ChatRequest', request);
    expect((await call('POST', '/v1/chat/completions', request)).status).toBe(200);
    const bad = { model: 'sandbox/echo', messages: [{ role: 'user', content: 'hi' }], temperature: 3 };
    expect(ajv.getSchema('openapi.json#/components/schemas/ChatRequest')!(bad)).toBe(false);
    expect((await call('POST', '/v1/chat/completions', bad)).status).toBe(400);
  });

  it('matches real chat answers, streamed chunks, credits, models and errors', async () => {
    const chat = await call('POST', '/v1/chat/completions', {
      model: 'sandbox/echo',
      messages: [{ role: 'user', content: 'hello there' }],
    });
    expectMatches('ChatCompletion', chat.body);
    const { cost: _cost, ...usageWithoutCost } = chat.body.usage;
    expect(
      ajv.getSchema('openapi.json#/components/schemas/ChatCompletion')!({ ...chat.body, usage: usageWithoutCost }),
    ).toBe(false);
    const tools = await call('POST', '/v1/chat/completions', {
      model: 'sandbox/echo',
      messages: [{ role: 'user', content: 'weather?' }],
      tools: [
        {
          type: 'function',
          function: { name: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
        },
      ],
      tool_choice: 'required',
    });
    expectMatches('ChatCompletion', tools.body);

    const stream = await call('POST', '/v1/chat/completions', {
      model: 'sandbox/lorem',
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 20,
      messages: [{ role: 'user', content: 'x' }],
    });
    const events = stream.text
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => line.slice(6));
    expect(events.at(-1)).toBe('[DONE]');
    for (const event of events.slice(0, -1)) expectMatches('ChatCompletionChunk', JSON.parse(event));

    expectMatches('CreditBalance', (await call('GET', '/v1/credits')).body);
    const readOnly = await gateway.key(accountId, { permissions: 'read_only' });
    expectMatches('CreditBalance', (await call('GET', '/v1/credits', undefined, readOnly.key)).body);
    expectMatches('ModelList', (await call('GET', '/v1/models?include_capabilities=true&active_only=false')).body);
    expectMatches('ModelList', (await call('GET', '/v1/models')).body);
    expectMatches('Model', (await call('GET', '/v1/models/sandbox/echo')).body);

    for (const failure of [
      await call('POST', '/v1/chat/completions', { model: 'sandbox/echo' }),
      await call('POST', '/v1/chat/completions', { model: 'nope', messages: [{ role: 'user', content: 'x' }] }),
      await call('GET', '/v1/credits', undefined, 'tg-live-00000000000000000000000000000000'),
      await call('GET', '/v1/models?capability=telepathy'),
    ]) {
      expect(failure.status).toBeGreaterThanOrEqual(400);
      expectMatches('Error', failure.body);
    }
  });

  it('matches real Responses answers and their stream events, by the operation of /v1/responses', async () => {
    const answer = await call('POST', '/v1/responses', { model: 'sandbox/echo', input: 'hello there' });
    expect(answer.status).toBe(200);
    expectAnswerMatches('POST', '/v1/responses', 200, answer.body);
    expectMatches('Response', answer.body);
    const { cost: _cost, ...usageWithoutCost } = answer.body.usage;
    expect(
      ajv.getSchema('openapi.json#/components/schemas/Response')!({ ...answer.body, usage: usageWithoutCost }),
    ).toBe(false);
    const tools = await call('POST', '/v1/responses', {
      model: 'sandbox/echo',
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'weather?' }] }],
      instructions: 'Be brief.',
      tools: [
        { type: 'function', name: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
      ],
      tool_choice: 'required',
    });
    expect(tools.status).toBe(200);
    expect(tools.body.output.some((item: any) => item.type === 'function_call')).toBe(true);
    expectAnswerMatches('POST', '/v1/responses', 200, tools.body);

    const stream = await call('POST', '/v1/responses', {
      model: 'sandbox/lorem',
      input: 'x',
      max_output_tokens: 20,
      stream: true,
    });
    const events = streamEvents(stream.text);
    expect(events.length).toBeGreaterThan(4);
    for (const event of events) expectAnswerMatches('POST', '/v1/responses', 200, JSON.parse(event), true);
    expect(JSON.parse(events.at(-1)!).response.usage.cost).toBeTypeOf('number');

    const failure = await call('POST', '/v1/responses', { model: 'sandbox/echo' });
    expect(failure.status).toBe(400);
    expectAnswerMatches('POST', '/v1/responses', 400, failure.body);
  });

  it("matches real Messages answers, stream events, token counts and Anthropic's errors, by the operations of /v1/messages", async () => {
    const messages = [{ role: 'user', content: 'hello there' }];
    const answer = await call('POST', '/v1/messages', { model: 'sandbox/echo', max_tokens: 50, messages });
    expect(answer.status).toBe(200);
    expectAnswerMatches('POST', '/v1/messages', 200, answer.body);
    expectMatches('AnthropicMessage', answer.body);
    expect(ajv.getSchema('openapi.json#/components/schemas/AnthropicMessage')!({ ...answer.body, usage: {} })).toBe(
      false,
    );
    const tools = await call('POST', '/v1/messages', {
      model: 'sandbox/echo',
      max_tokens: 50,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'weather?' }] }],
      tools: [{ name: 'weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } }],
      tool_choice: { type: 'any' },
    });
    expect(tools.status).toBe(200);
    expect(tools.body.content.some((block: any) => block.type === 'tool_use')).toBe(true);
    expectAnswerMatches('POST', '/v1/messages', 200, tools.body);

    const stream = await call('POST', '/v1/messages', {
      model: 'sandbox/lorem',
      max_tokens: 20,
      stream: true,
      messages: [{ role: 'user', content: 'x' }],
    });
    const events = streamEvents(stream.text);
    expect(events.map((event) => JSON.parse(event).type)).toContain('message_delta');
    for (const event of events) expectAnswerMatches('POST', '/v1/messages', 200, JSON.parse(event), true);

    const count = await call('POST', '/v1/messages/count_tokens', { model: 'sandbox/echo', messages });
    expect(count.status).toBe(200);
    expectAnswerMatches('POST', '/v1/messages/count_tokens', 200, count.body);

    const missing = await call('POST', '/v1/messages', { model: 'sandbox/echo', messages });
    const unknown = await call('POST', '/v1/messages', { model: 'nope', max_tokens: 5, messages });
    const keyless = await call(
      'POST',
      '/v1/messages',
      { model: 'sandbox/echo', max_tokens: 5, messages },
      'tg-live-00000000000000000000000000000000',
    );
    for (const [failure, status] of [
      [missing, 400],
      [unknown, 404],
      [keyless, 401],
    ] as const) {
      expect(failure.status, failure.text).toBe(status);
      expectAnswerMatches('POST', '/v1/messages', status, failure.body);
      expectMatches('AnthropicError', failure.body);
    }
    // The chat error envelope is not Anthropic's.
    expect(
      ajv.getSchema('openapi.json#/components/schemas/AnthropicError')!({ error: { message: 'x', code: 'y' } }),
    ).toBe(false);
  });

  it('matches real webhook records, deliveries, test sends and deletions, by their operations', async () => {
    const created = await call('POST', '/v1/webhooks', {
      url: 'http://127.0.0.1:9/hook',
      secret: 's'.repeat(32),
      events: [{ type: 'credit.low_balance' }],
    });
    expect(created.status).toBe(201);
    expectMatches('Webhook', created.body);
    expectAnswer('POST', '/v1/webhooks', 201, created);
    const list = expectAnswer('GET', '/v1/webhooks', 200, await call('GET', '/v1/webhooks'));
    for (const item of list.data) expectMatches('Webhook', item);
    const test = expectAnswer(
      'POST',
      '/v1/webhooks/{id}/test',
      200,
      await call('POST', `/v1/webhooks/${created.body.id}/test`, {}),
    );
    expect(test).toMatchObject({ object: 'webhook_test', success: false, status: null });
    expect(test.error).toBeTypeOf('string');
    expectMatches('WebhookDelivery', test.delivery);
    const deliveries = expectAnswer(
      'GET',
      '/v1/webhooks/{id}/deliveries',
      200,
      await call('GET', `/v1/webhooks/${created.body.id}/deliveries`),
    );
    expect(deliveries.data.length).toBeGreaterThan(0);
    for (const item of deliveries.data) expectMatches('WebhookDelivery', item);

    const deleted = expectAnswer(
      'DELETE',
      '/v1/webhooks/{id}',
      200,
      await call('DELETE', `/v1/webhooks/${created.body.id}`),
    );
    expect(deleted).toEqual({ id: created.body.id, object: 'webhook', deleted: true });
    expectAnswer('DELETE', '/v1/webhooks/{id}', 404, await call('DELETE', `/v1/webhooks/${created.body.id}`));
    // The schemas say what an answer must hold.
    expect(answerSchema('POST', '/v1/webhooks/{id}/test', 200)({ ...test, success: 'no' })).toBe(false);
    expect(answerSchema('DELETE', '/v1/webhooks/{id}', 200)({ ...deleted, deleted: false })).toBe(false);
  });

  it('matches real /v1/keys answers and the admin key PATCH, every governance field documented', async () => {
    const management = await gateway.key(accountId, { permissions: 'management' });
    const as = (method: string, path: string, body?: unknown) => call(method, path, body, management.key);
    const created = expectAnswer(
      'POST',
      '/v1/keys',
      201,
      await as('POST', '/v1/keys', {
        name: 'documented',
        permissions: 'project',
        models: ['sandbox/echo'],
        limit: 1.5,
        limit_reset: 'weekly',
        expires_at: new Date(Date.now() + 86_400_000).toISOString(),
        requests_per_minute: 10,
        tokens_per_minute: 1000,
        allowed_ips: ['10.0.0.0/8', '2001:db8::/32'],
      }),
    );
    expectMatches('CreatedApiKey', created);
    const list = expectAnswer('GET', '/v1/keys', 200, await as('GET', '/v1/keys'));
    for (const item of list.data) expectMatches('ApiKey', item);
    expectAnswer('GET', '/v1/keys/{id}', 200, await as('GET', `/v1/keys/${created.id}`));
    const patched = expectAnswer(
      'PATCH',
      '/v1/keys/{id}',
      200,
      await as('PATCH', `/v1/keys/${created.id}`, { limit: null, allowed_ips: [] }),
    );
    expect(patched).toMatchObject({ limit: null, limit_remaining: null, allowed_ips: [] });
    const byOperator = expectAnswer(
      'PATCH',
      '/admin/keys/{id}',
      200,
      await gateway.admin('PATCH', `/admin/keys/${created.id}`, { name: 'renamed', expires_at: null }),
    );
    expect(byOperator).toMatchObject({ name: 'renamed', expires_at: null });
    expectAnswer('DELETE', '/v1/keys/{id}', 200, await as('DELETE', `/v1/keys/${created.id}`));
    expectAnswer('GET', '/v1/keys/{id}', 404, await as('GET', '/v1/keys/key_nope'));
    expectAnswer('POST', '/v1/keys', 403, await as('POST', '/v1/keys', { permissions: 'management' }));
    expectAnswer('POST', '/v1/keys', 400, await as('POST', '/v1/keys', { allowed_ips: ['x'] }));
    // The schemas say what an answer must hold.
    expect(answerSchema('GET', '/v1/keys/{id}', 200)({ ...patched, allowed_ips: 'any' })).toBe(false);
    expect(answerSchema('POST', '/v1/keys', 201)({ ...created, limit_reset: 'hourly' })).toBe(false);
  });

  it('matches real /v1/audit answers: a page of entries, a refused limit', async () => {
    const management = await gateway.key(accountId, { permissions: 'management' });
    const as = (path: string) => call('GET', path, undefined, management.key);
    for (const name of ['audited', 'audited too'])
      await call('POST', '/v1/keys', { name, permissions: 'read_only' }, management.key);
    const page = expectAnswer('GET', '/v1/audit', 200, await as('/v1/audit?limit=1'));
    expect(page.data).toHaveLength(1);
    expect(page.has_more).toBe(true);
    expectMatches('AuditEntry', page.data[0]);
    expectAnswer('GET', '/v1/audit', 400, await as('/v1/audit?limit=0'));
    expect(answerSchema('GET', '/v1/audit', 200)({ ...page, has_more: 'yes' })).toBe(false);
  });

  it('matches real admin answers by their operations: accounts, keys, credits, the ledger, purchases and refunds', async () => {
    const created = expectAnswer(
      'POST',
      '/admin/accounts',
      201,
      await gateway.admin('POST', '/admin/accounts', { email: `openapi-${Date.now()}@example.com` }),
    );
    const id: string = created.id;
    expect(created.api_key).toMatch(/^tg-live-/);
    const page = expectAnswer('GET', '/admin/accounts', 200, await gateway.admin('GET', '/admin/accounts?limit=1000'));
    expect(page.data.map((account: any) => account.id)).toContain(id);

    const patched = expectAnswer(
      'PATCH',
      '/admin/accounts/{id}',
      200,
      await gateway.admin('PATCH', `/admin/accounts/${id}`, {
        requests_per_minute: 100,
        daily_limit: 'none',
        low_balance_thresholds: [1, 2.5],
        billing: { processor: 'invoice', monthly_ceiling: 100 },
        auto_recharge: { enabled: true, threshold: 1, amount: 10 },
      }),
    );
    expect(patched).toMatchObject({
      overrides: { requests_per_minute: 100, daily_limit: 'none' },
      billing: { processor: 'invoice', monthly_ceiling: 100 },
      low_balance_thresholds: [1, 2.5],
    });
    const budget = expectAnswer(
      'PATCH',
      '/admin/accounts/{id}',
      200,
      await gateway.admin('PATCH', `/admin/accounts/${id}`, { daily_limit: 7, billing: null }),
    );
    expect(budget).toMatchObject({ overrides: { daily_limit: 7 }, limits: { daily_limit: 7 }, billing: null });

    const key = expectAnswer(
      'POST',
      '/admin/accounts/{id}/keys',
      201,
      await gateway.admin('POST', `/admin/accounts/${id}/keys`, {
        name: 'project',
        permissions: 'project',
        models: ['sandbox/echo'],
        spend_limit: 5,
      }),
    );
    expect(key.key).toMatch(/^tg-live-/);
    expectAnswer('POST', '/admin/accounts/{id}/keys', 201, await gateway.admin('POST', `/admin/accounts/${id}/keys`));
    const chat = await call(
      'POST',
      '/v1/chat/completions',
      {
        model: 'sandbox/echo',
        messages: [{ role: 'user', content: 'hi' }],
      },
      key.key,
    );
    expect(chat.status).toBe(200);

    const topUp = expectAnswer(
      'POST',
      '/admin/accounts/{id}/credits',
      200,
      await gateway.admin('POST', `/admin/accounts/${id}/credits`, { amount: 10, note: 'top-up' }),
    );
    expect(topUp).toMatchObject({ object: 'credit_adjustment', account_id: id, amount: 10 });
    expectAnswer(
      'POST',
      '/admin/accounts/{id}/credits',
      200,
      await gateway.admin('POST', `/admin/accounts/${id}/credits`, { amount: -1 }),
    );

    const account = expectAnswer(
      'GET',
      '/admin/accounts/{id}',
      200,
      await gateway.admin('GET', `/admin/accounts/${id}`),
    );
    expect(account.keys).toHaveLength(3);
    expect(account.keys.find((k: any) => k.id === key.id).last_used).toBeTypeOf('number');
    const ledger = expectAnswer(
      'GET',
      '/admin/accounts/{id}/ledger',
      200,
      await gateway.admin('GET', `/admin/accounts/${id}/ledger`),
    );
    expect(ledger.data.map((entry: any) => entry.kind)).toEqual(
      expect.arrayContaining(['grant', 'debit', 'topup', 'correction']),
    );
    const audit = expectAnswer(
      'GET',
      '/admin/accounts/{id}/audit',
      200,
      await gateway.admin('GET', `/admin/accounts/${id}/audit`),
    );
    expect(audit.data.map((entry: any) => entry.action)).toEqual(expect.arrayContaining(['credits.add']));

    // A purchase paid through Stripe (its event answered as documented), then refunded by the operator.
    const purchase = await call('POST', '/v1/credits/purchases', { amount: 20 }, created.api_key);
    expect(purchase.status).toBe(201);
    const session = [...stripe.sessions.values()].find((s) => s.client_reference_id === purchase.body.id)!;
    const paid = await stripe.deliver(gateway.url, stripe.event('checkout.session.completed', stripe.pay(session.id)));
    expect(paid.status).toBe(200);
    expectAnswerMatches('POST', '/webhooks/stripe', 200, paid.body);
    const purchases = expectAnswer(
      'GET',
      '/admin/accounts/{id}/purchases',
      200,
      await gateway.admin('GET', `/admin/accounts/${id}/purchases`),
    );
    expect(purchases.data).toMatchObject([{ id: purchase.body.id, status: 'paid' }]);
    const refund = expectAnswer(
      'POST',
      '/admin/accounts/{id}/purchases/{purchase}/refund',
      200,
      await gateway.admin('POST', `/admin/accounts/${id}/purchases/${purchase.body.id}/refund`, { amount: 5 }),
    );
    expect(refund).toMatchObject({ object: 'credit_refund', status: 'succeeded', amount_refunded: 5, debited: 5 });

    const revoked = expectAnswer(
      'DELETE',
      '/admin/keys/{id}',
      200,
      await gateway.admin('DELETE', `/admin/keys/${key.id}`),
    );
    expect(revoked).toMatchObject({ id: key.id, revoked: true });
    expect(revoked.revoked_at).toBeTypeOf('number');
    expect(revoked).not.toHaveProperty('key');

    expectAnswer('GET', '/admin/accounts/{id}', 404, await gateway.admin('GET', '/admin/accounts/acct_missing'));
    expectAnswer('GET', '/admin/accounts', 400, await gateway.admin('GET', '/admin/accounts?limit=0'));
    // The schemas say what an answer must hold.
    const { balance: _balance, ...withoutBalance } = account;
    expect(answerSchema('GET', '/admin/accounts/{id}', 200)(withoutBalance)).toBe(false);
    expect(answerSchema('GET', '/admin/accounts/{id}', 200)({ ...account, keys: [{ ...key, revoked: 'no' }] })).toBe(
      false,
    );
    expect(answerSchema('POST', '/admin/accounts/{id}/keys', 201)({ ...key, key: undefined })).toBe(false);
    expect(answerSchema('GET', '/admin/accounts/{id}/ledger', 200)({ ...ledger, data: [{ kind: 'gift' }] })).toBe(
      false,
    );
  });

  it('matches real generations, usage exports (JSON and CSV) and the calling key, by their operations', async () => {
    const owner = await gateway.account();
    const project = await gateway.key(owner.id, { permissions: 'project', name: 'project' });
    const readOnly = await gateway.key(owner.id, { permissions: 'read_only' });
    const test = await gateway.key(owner.id, { environment: 'test' });
    const as = (auth: string) => (path: string) => call('GET', path, undefined, auth);
    const messages = [{ role: 'user', content: 'what did this cost?' }];
    const chat = await call('POST', '/v1/chat/completions', { model: 'sandbox/echo', messages }, owner.key);
    const stream = await call(
      'POST',
      '/v1/chat/completions',
      { model: 'sandbox/lorem', stream: true, stream_options: { include_usage: true }, max_tokens: 12, messages },
      project.key,
    );
    const embedded = await call('POST', '/v1/embeddings', { model: 'sandbox/embed', input: 'x' }, owner.key);
    for (const answer of [chat, stream, embedded]) expect(answer.status, answer.text).toBe(200);

    // One request explained, by the answer's id and by the x-request-id; a streamed one by the key that made it.
    const generation = expectAnswer(
      'GET',
      '/v1/generation',
      200,
      await as(owner.key)(`/v1/generation?id=${chat.body.id}`),
    );
    expect(generation).toMatchObject({ object: 'generation', answer_id: chat.body.id, model: 'sandbox/echo' });
    expect(generation.breakdown.lines.map((line: any) => line.kind)).toEqual(['input', 'output']);
    const streamed = expectAnswer(
      'GET',
      '/v1/generation',
      200,
      await as(project.key)(`/v1/generation?id=${stream.headers.get('x-request-id')}`),
    );
    expect(streamed).toMatchObject({ streamed: true, key: { id: project.id, name: 'project' } });
    expect(streamed.time_to_first_token_ms).toBeTypeOf('number');
    const embedding = expectAnswer(
      'GET',
      '/v1/generation',
      200,
      await as(readOnly.key)(`/v1/generation?id=${embedded.headers.get('x-request-id')}`),
    );
    expect(embedding).toMatchObject({ endpoint: '/v1/embeddings', tokens: { completion: 0 } });
    expectAnswer('GET', '/v1/generation', 404, await as(project.key)(`/v1/generation?id=${chat.body.id}`));
    expectAnswer('GET', '/v1/generation', 400, await as(owner.key)('/v1/generation'));
    expectAnswer(
      'GET',
      '/v1/generation',
      401,
      await as('tg-live-00000000000000000000000000000000')('/v1/generation?id=x'),
    );

    // Usage exports: per request and per group, in JSON by the schema, in CSV by the columns it names.
    const today = new Date().toISOString().slice(0, 10);
    const range = `from=${today}&to=${today}`;
    const perRequest = expectAnswer('GET', '/v1/usage', 200, await as(owner.key)(`/v1/usage?${range}`));
    expect(perRequest.data).toHaveLength(3);
    expect(perRequest.total.cost_nano).toBe(
      String(perRequest.data.reduce((sum: bigint, row: any) => sum + BigInt(row.cost_nano), 0n)),
    );
    const schemas = doc.components.schemas;
    const csvHeader = async (query: string) => {
      const response = await fetch(`${gateway.url}/v1/usage?${range}&format=csv${query}`, {
        headers: { authorization: `Bearer ${owner.key}` },
      });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/csv/);
      expect(response.headers.get('content-disposition')).toMatch(/^attachment; filename="usage-.*\.csv"$/);
      return (await response.text()).split('\r\n')[0]!.split(',');
    };
    expect(await csvHeader('')).toEqual(Object.keys(schemas.UsageRequestRow.properties));
    for (const by of ['day', 'model', 'key', 'endpoint']) {
      const grouped = expectAnswer('GET', '/v1/usage', 200, await as(owner.key)(`/v1/usage?${range}&group_by=${by}`));
      expect(grouped.group_by).toBe(by);
      expect(grouped.total).toEqual(perRequest.total);
      const variant = schemas.UsageGroupRow.anyOf.find((v: any) => v.description.startsWith(`group_by=${by}:`));
      for (const row of grouped.data) expect(Object.keys(row)).toEqual(Object.keys(variant.properties));
      expect(await csvHeader(`&group_by=${by}`)).toEqual(Object.keys(variant.properties));
    }
    const own = expectAnswer('GET', '/v1/usage', 200, await as(project.key)(`/v1/usage?${range}`));
    expect(own.data.map((row: any) => row.key_id)).toEqual([project.id]);
    expectAnswer('GET', '/v1/usage', 400, await as(owner.key)('/v1/usage?group_by=week'));
    expectAnswer('GET', '/v1/usage', 400, await as(owner.key)(`/v1/usage?from=${today}&to=2000-01-01`));

    // The calling key, of every kind.
    for (const { key } of [owner, project, readOnly, test])
      expectAnswer('GET', '/v1/key', 200, await as(key)('/v1/key'));
    expect((await as(project.key)('/v1/key')).body).toMatchObject({ id: project.id, permissions: 'project' });
    expectAnswer('GET', '/v1/key', 401, await as('tg-live-00000000000000000000000000000000')('/v1/key'));

    // The schemas say what an answer must hold.
    const { cost_nano: _nano, ...withoutNano } = generation;
    expect(answerSchema('GET', '/v1/generation', 200)(withoutNano)).toBe(false);
    expect(answerSchema('GET', '/v1/generation', 200)({ ...generation, cost_nano: 1800 })).toBe(false);
    expect(answerSchema('GET', '/v1/usage', 200)({ ...perRequest, data: [{ day: today }] })).toBe(false);
    expect(answerSchema('GET', '/v1/usage', 200)({ ...perRequest, group_by: 'week' })).toBe(false);
    expect(answerSchema('GET', '/v1/key', 200)({ ...(await as(owner.key)('/v1/key')).body, usage: {} })).toBe(false);
  });

  it('matches the answers of /health, /ready and the document itself', async () => {
    expect(expectAnswer('GET', '/health', 200, await call('GET', '/health', undefined, undefined))).toEqual({
      status: 'ok',
    });
    expect(expectAnswer('GET', '/ready', 200, await call('GET', '/ready', undefined, undefined))).toEqual({
      status: 'ready',
      database: 'sqlite',
    });
    expectAnswerMatches('GET', '/v1/openapi.json', 200, doc);
    const check = answerSchema('GET', '/v1/openapi.json', 200);
    expect(check({ ...doc, openapi: '3.0.3' })).toBe(false);
    expect(check({ openapi: '3.1.0', info: { title: 'x' }, paths: {} })).toBe(false);
    expect(answerSchema('GET', '/ready', 200)({ status: 'ready' })).toBe(false);
  });

  it('describes every success answer by a real schema, never a bare object', () => {
    for (const [path, methods] of Object.entries(doc.paths as Record<string, Record<string, any>>))
      for (const [method, operation] of Object.entries(methods))
        for (const [status, response] of Object.entries(operation.responses as Record<string, any>)) {
          if (!status.startsWith('2')) continue;
          for (const [type, content] of Object.entries(response.content as Record<string, { schema: any }>)) {
            const where = `${method.toUpperCase()} ${path} ${status} ${type}`;
            const schema = content.schema;
            if (type === 'application/json') expect(schema.$ref ?? schema.properties, where).toBeDefined();
            else expect(schema.type, where).toBe('string');
          }
        }
  });

  it('names only routes that exist', async () => {
    const operations = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, methods]) =>
      Object.keys(methods).map((method) => ({
        method: method.toUpperCase(),
        path: path.replace(/\{[^}]+\}/g, 'x_unknown'),
      })),
    );
    expect(operations.length).toBeGreaterThanOrEqual(20);
    for (const { method, path } of operations) {
      const response = await call(
        method,
        path,
        method === 'GET' || method === 'DELETE' ? undefined : {},
        'tg-live-00000000000000000000000000000000',
      );
      expect(response.body?.error?.code, `${method} ${path}`).not.toBe('not_found');
    }
  });

  it('files every operation under a declared tag', () => {
    const declared = new Set((doc.tags as Array<{ name: string }>).map((tag) => tag.name));
    for (const [path, methods] of Object.entries(doc.paths as Record<string, Record<string, { tags?: string[] }>>))
      for (const [method, operation] of Object.entries(methods))
        for (const tag of operation.tags ?? []) expect(declared.has(tag), `${method} ${path}: ${tag}`).toBe(true);
  });

  it('renders as a Markdown reference (tollgate openapi --markdown) naming every operation', () => {
    const reference = renderReference(doc);
    for (const [path, methods] of Object.entries(doc.paths as Record<string, Record<string, unknown>>)) {
      for (const method of Object.keys(methods)) expect(reference).toContain(`## ${method.toUpperCase()} ${path}`);
    }
  });
});

describe("GET /v1/openapi.json describes Anthropic's own answers, passed through natively", () => {
  const CLAUDE = 'claude-haiku-5-5';
  let native: NativeProviders;
  let nativeKey: string;
  beforeAll(async () => {
    native = await startWithNativeProviders();
    ({ key: nativeKey } = await native.gw.account());
  });
  afterAll(() => native.close());

  it('matches a native Message (thinking and tool_use blocks), its stream events and an upstream error', async () => {
    const send = (body: object) => apiCall(native.gw.url, nativeKey, 'POST', '/v1/messages', body);
    const messages = [{ role: 'user', content: 'Think, then answer' }];
    const body = { model: CLAUDE, max_tokens: 2_000, thinking: { type: 'enabled', budget_tokens: 1_024 }, messages };
    native.anthropic.setBehavior({
      kind: 'ok',
      thinking: true,
      tools: [{ name: 'read_file', input: { path: 'a.txt' } }],
      stopReason: 'tool_use',
    });
    const answer = await send({
      ...body,
      tools: [{ name: 'read_file', input_schema: { type: 'object', properties: { path: { type: 'string' } } } }],
    });
    expect(answer.status, answer.text).toBe(200);
    expectAnswerMatches('POST', '/v1/messages', 200, answer.body);
    const stream = await send({ ...body, stream: true });
    expect(stream.status).toBe(200);
    const events = streamEvents(stream.text).map((event) => JSON.parse(event));
    expect(events.map((event) => event.type)).toContain('content_block_delta');
    for (const event of events) expectAnswerMatches('POST', '/v1/messages', 200, event, true);

    native.anthropic.setBehavior({ kind: 'error', status: 400, message: 'max_tokens: too large' });
    const failure = await send(body);
    native.anthropic.setBehavior({ kind: 'ok' });
    expect(failure.status).toBe(400);
    expectAnswerMatches('POST', '/v1/messages', 400, failure.body);
  });
});
