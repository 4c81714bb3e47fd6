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
import { startWithNativeProviders, type NativeProviders } from '../support/native-providers.js';

let gateway: TestGateway;
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
 * Asserts `value` matches the document's own schema for an answer of `POST path`: the `status` answer's JSON, or
 * (with `event`) one event of its stream (`x-event-schema`).
 */
function expectAnswerMatches(path: string, status: number, value: unknown, event = false): void {
  const content = event ? ['text/event-stream', 'x-event-schema'] : ['application/json', 'schema'];
  const pointer = ['paths', path, 'post', 'responses', String(status), 'content', ...content]
    .map((part) => part.replace(/~/g, '~0').replace(/\//g, '~1'))
    .join('/');
  const check = ajv.getSchema(`openapi.json#/${pointer}`);
  expect(check, `no schema at ${pointer}`).toBeDefined();
  const ok = check!(value);
  expect(ok, `${path} ${status}: ${JSON.stringify(check!.errors)}\n${JSON.stringify(value)}`).toBe(true);
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
  gateway = await startGateway({ overrides: { webhooks: { allow_private_urls: true } } });
  ({ id: accountId, key } = await gateway.account());
  const response = await fetch(`${gateway.url}/v1/openapi.json`);
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  doc = await response.json();
  ajv.addSchema(doc, 'openapi.json');
});
afterAll(() => gateway.close());

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
    expectAnswerMatches('/v1/responses', 200, answer.body);
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
    expectAnswerMatches('/v1/responses', 200, tools.body);

    const stream = await call('POST', '/v1/responses', {
      model: 'sandbox/lorem',
      input: 'x',
      max_output_tokens: 20,
      stream: true,
    });
    const events = streamEvents(stream.text);
    expect(events.length).toBeGreaterThan(4);
    for (const event of events) expectAnswerMatches('/v1/responses', 200, JSON.parse(event), true);
    expect(JSON.parse(events.at(-1)!).response.usage.cost).toBeTypeOf('number');

    const failure = await call('POST', '/v1/responses', { model: 'sandbox/echo' });
    expect(failure.status).toBe(400);
    expectAnswerMatches('/v1/responses', 400, failure.body);
  });

  it("matches real Messages answers, stream events, token counts and Anthropic's errors, by the operations of /v1/messages", async () => {
    const messages = [{ role: 'user', content: 'hello there' }];
    const answer = await call('POST', '/v1/messages', { model: 'sandbox/echo', max_tokens: 50, messages });
    expect(answer.status).toBe(200);
    expectAnswerMatches('/v1/messages', 200, answer.body);
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
    expectAnswerMatches('/v1/messages', 200, tools.body);

    const stream = await call('POST', '/v1/messages', {
      model: 'sandbox/lorem',
      max_tokens: 20,
      stream: true,
      messages: [{ role: 'user', content: 'x' }],
    });
    const events = streamEvents(stream.text);
    expect(events.map((event) => JSON.parse(event).type)).toContain('message_delta');
    for (const event of events) expectAnswerMatches('/v1/messages', 200, JSON.parse(event), true);

    const count = await call('POST', '/v1/messages/count_tokens', { model: 'sandbox/echo', messages });
    expect(count.status).toBe(200);
    expectAnswerMatches('/v1/messages/count_tokens', 200, count.body);

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
      expectAnswerMatches('/v1/messages', status, failure.body);
      expectMatches('AnthropicError', failure.body);
    }
    // The chat error envelope is not Anthropic's.
    expect(
      ajv.getSchema('openapi.json#/components/schemas/AnthropicError')!({ error: { message: 'x', code: 'y' } }),
    ).toBe(false);
  });

  it('matches real webhook records and deliveries', async () => {
    const created = await call('POST', '/v1/webhooks', {
      url: 'http://127.0.0.1:9/hook',
      secret: 's'.repeat(32),
      events: [{ type: 'credit.low_balance' }],
    });
    expect(created.status).toBe(201);
    expectMatches('Webhook', created.body);
    const list = await call('GET', '/v1/webhooks');
    for (const item of list.body.data) expectMatches('Webhook', item);
    const test = await call('POST', `/v1/webhooks/${created.body.id}/test`, {});
    expectMatches('WebhookDelivery', test.body.delivery);
    const deliveries = await call('GET', `/v1/webhooks/${created.body.id}/deliveries`);
    expect(deliveries.body.data.length).toBeGreaterThan(0);
    for (const item of deliveries.body.data) expectMatches('WebhookDelivery', item);
  });

  it("documents an account's purchases for the operator as pages of CreditPurchase", async () => {
    const operation = doc.paths['/admin/accounts/{id}/purchases'].get;
    expect(JSON.stringify(operation.responses['200'])).toContain('#/components/schemas/CreditPurchase');
    expect(operation.parameters.map((p: any) => p.name)).toEqual(['id', 'limit', 'before']);
    const listed = await gateway.admin('GET', `/admin/accounts/${accountId}/purchases`);
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({ object: 'list', data: [], has_more: false });
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
    expectAnswerMatches('/v1/messages', 200, answer.body);
    const stream = await send({ ...body, stream: true });
    expect(stream.status).toBe(200);
    const events = streamEvents(stream.text).map((event) => JSON.parse(event));
    expect(events.map((event) => event.type)).toContain('content_block_delta');
    for (const event of events) expectAnswerMatches('/v1/messages', 200, event, true);

    native.anthropic.setBehavior({ kind: 'error', status: 400, message: 'max_tokens: too large' });
    const failure = await send(body);
    native.anthropic.setBehavior({ kind: 'ok' });
    expect(failure.status).toBe(400);
    expectAnswerMatches('/v1/messages', 400, failure.body);
  });
});
