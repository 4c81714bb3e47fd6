/** Every error a client can provoke, over raw HTTP: status, envelope, x-request-id, and never a 500. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../src/config/index.js';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../support/gateway.js';

interface Sent {
  status: number;
  headers: Headers;
  text: string;
  body: any;
}

const TINY: ModelConfig = {
  id: 'tiny',
  provider: 'sandbox',
  upstream_model: 'echo',
  pricing: { prompt: 0.001, completion: 0.002 },
  context_length: 50,
  max_tokens: 20,
  capabilities: {
    chat: true,
    completion: false,
    function_calling: true,
    vision: false,
    embeddings: false,
    json_mode: true,
  },
  created: 1700000000,
};

const statuses: number[] = [];

async function send(
  gw: TestGateway,
  method: string,
  path: string,
  options: { key?: string; body?: unknown; rawBody?: string | Uint8Array; headers?: Record<string, string> } = {},
): Promise<Sent> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
  let body: string | Uint8Array | undefined;
  if (options.rawBody !== undefined) body = options.rawBody;
  else if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined && !headers['content-type']) headers['content-type'] = 'application/json';
  const response = await fetch(`${gw.url}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
  const text = await response.text();
  let parsed: any;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  statuses.push(response.status);
  expect(response.headers.get('x-request-id'), `${method} ${path}: x-request-id`).toBeTruthy();
  return { status: response.status, headers: response.headers, text, body: parsed };
}

/** The envelope of spec 7 with the contract's `param`. */
function expectEnvelope(
  sent: Sent,
  status: number,
  fields: { type: string; code: string; param?: string | null; message?: string },
): void {
  expect(sent.status, sent.text).toBe(status);
  expect(Object.keys(sent.body)).toEqual(['error']);
  const error = sent.body.error;
  expect(typeof error.message).toBe('string');
  expect(error.message.length).toBeGreaterThan(0);
  expect(error).toHaveProperty('param');
  expect(error.type).toBe(fields.type);
  expect(error.code).toBe(fields.code);
  if (fields.param !== undefined) expect(error.param).toBe(fields.param);
  if (fields.message !== undefined) expect(error.message).toBe(fields.message);
}

const chat = (gw: TestGateway, key: string | undefined, body: unknown) =>
  send(gw, 'POST', '/v1/chat/completions', { ...(key !== undefined ? { key } : {}), body });
const hello = [{ role: 'user', content: 'Hello' }];

describe('errors over raw HTTP', () => {
  let gw: TestGateway;
  let accountId: string;
  let liveKey: string;
  let testKey: string;
  beforeAll(async () => {
    // Configured models are added to the built-in catalog (merged by id).
    gw = await startGateway({ overrides: { models: [TINY] } });
    ({ id: accountId, key: liveKey } = await gw.account());
    ({ key: testKey } = await gw.key(accountId, { environment: 'test' }));
  });
  afterAll(async () => {
    await gw?.close();
    expect(statuses.length).toBeGreaterThan(0);
    expect(statuses.filter((s) => s >= 500 && s !== 503)).toEqual([]);
  });

  it('every response carries x-request-id; a valid incoming one is echoed', async () => {
    for (const [method, path] of [
      ['GET', '/health'],
      ['GET', '/ready'],
      ['GET', '/v1/credits'],
      ['GET', '/nope'],
      ['POST', '/v1/chat/completions'],
    ] as const) {
      const sent = await send(gw, method, path);
      expect(sent.headers.get('x-request-id')).toMatch(/\S+/);
    }
    const first = await send(gw, 'GET', '/health');
    const second = await send(gw, 'GET', '/health');
    expect(first.headers.get('x-request-id')).not.toBe(second.headers.get('x-request-id'));

    const echoed = await send(gw, 'GET', '/health', { headers: { 'x-request-id': 'my-trace.id:42' } });
    expect(echoed.headers.get('x-request-id')).toBe('my-trace.id:42');
    const echoedError = await send(gw, 'GET', '/v1/credits', { headers: { 'x-request-id': 'err-trace-1' } });
    expect(echoedError.status).toBe(401);
    expect(echoedError.headers.get('x-request-id')).toBe('err-trace-1');
    const echoedChat = await send(gw, 'POST', '/v1/chat/completions', {
      key: liveKey,
      body: { model: 'sandbox/echo', messages: hello },
      headers: { 'x-request-id': 'chat-trace-1' },
    });
    expect(echoedChat.status).toBe(200);
    expect(echoedChat.headers.get('x-request-id')).toBe('chat-trace-1');
    // An invalid incoming id (spaces, too long) is replaced, not echoed.
    const replaced = await send(gw, 'GET', '/health', { headers: { 'x-request-id': 'has spaces <script>' } });
    expect(replaced.headers.get('x-request-id')).not.toBe('has spaces <script>');
    const tooLong = await send(gw, 'GET', '/health', { headers: { 'x-request-id': 'a'.repeat(300) } });
    expect(tooLong.headers.get('x-request-id')).not.toBe('a'.repeat(300));
  });

  it('unknown routes are 404 not_found in the envelope', async () => {
    for (const [method, path] of [
      ['GET', '/nope'],
      ['GET', '/v1/nope'],
      ['POST', '/v1/audio/speech'],
      ['DELETE', '/v1/credits'],
    ] as const) {
      const sent = await send(gw, method, path, { key: liveKey });
      expectEnvelope(sent, 404, { type: 'invalid_request_error', code: 'not_found', param: null });
    }
  });

  it('paths Fastify rejects before routing still get the envelope and a request id', async () => {
    const badEscape = await send(gw, 'GET', '/v1/models/%ZZ', { key: liveKey });
    expectEnvelope(badEscape, 400, { type: 'invalid_request_error', code: 'invalid_request', param: null });
    const adminBadEscape = await send(gw, 'GET', '/admin/accounts/%E0%A4%A', { key: ADMIN_TOKEN });
    expectEnvelope(adminBadEscape, 400, { type: 'invalid_request_error', code: 'invalid_request' });
    const longParam = await send(gw, 'GET', `/admin/accounts/${'a'.repeat(300)}`, { key: ADMIN_TOKEN });
    expect(longParam.status).toBe(404);
    expect(longParam.body.error.code).toBe('not_found');
    const longModel = await send(gw, 'GET', `/v1/models/${'m'.repeat(300)}`, { key: liveKey });
    expect(longModel.status).toBe(404);
    expect(['not_found', 'model_not_found']).toContain(longModel.body.error.code);
  });

  it('malformed bodies and fields are 400 invalid_request naming the field', async () => {
    const malformed = await send(gw, 'POST', '/v1/chat/completions', {
      key: liveKey,
      rawBody: '{"model": "sandbox/echo", "messages": [',
    });
    expectEnvelope(malformed, 400, { type: 'invalid_request_error', code: 'invalid_request' });

    const cases: Array<[unknown, string]> = [
      [{ messages: hello }, 'model'],
      [{ model: 'sandbox/echo' }, 'messages'],
      [{ model: 'sandbox/echo', messages: 'Hello' }, 'messages'],
      [{ model: 'sandbox/echo', messages: [{ role: 'wizard', content: 'Hello' }] }, 'messages[0].role'],
      [{ model: 'sandbox/echo', messages: hello, temperature: 'hot' }, 'temperature'],
      [{ model: 42, messages: hello }, 'model'],
      [{ model: 'sandbox/echo', messages: hello, max_tokens: 'many' }, 'max_tokens'],
    ];
    for (const [body, param] of cases) {
      const sent = await chat(gw, liveKey, body);
      expect(sent.status, JSON.stringify(body)).toBe(400);
      expectEnvelope(sent, 400, { type: 'invalid_request_error', code: 'invalid_request', param });
    }
    const notObject = await send(gw, 'POST', '/v1/chat/completions', { key: liveKey, rawBody: '[1,2,3]' });
    expectEnvelope(notObject, 400, { type: 'invalid_request_error', code: 'invalid_request' });
  });

  it('a body over 4 MiB is 413 request_too_large', async () => {
    const big = JSON.stringify({
      model: 'sandbox/echo',
      messages: [{ role: 'user', content: 'x'.repeat(4 * 1024 * 1024 + 10) }],
    });
    const sent = await send(gw, 'POST', '/v1/chat/completions', { key: liveKey, rawBody: big });
    expectEnvelope(sent, 413, { type: 'invalid_request_error', code: 'request_too_large' });
  });

  it('authentication: missing, malformed and unknown keys', async () => {
    expectEnvelope(await chat(gw, undefined, { model: 'sandbox/echo', messages: hello }), 401, {
      type: 'authentication_error',
      code: 'missing_api_key',
      message: 'No API key provided',
    });
    // A keyless request is refused before its body is looked at.
    expectEnvelope(await chat(gw, undefined, { messages: 'nonsense' }), 401, {
      type: 'authentication_error',
      code: 'missing_api_key',
    });
    for (const key of [
      'not-a-key',
      'tg-live-short',
      'sk-0123456789abcdef0123456789abcdef',
      'tg-live-0123456789abcdefghijABCDEFGHIJ01',
      `${liveKey}x`,
    ]) {
      expectEnvelope(await chat(gw, key, { model: 'sandbox/echo', messages: hello }), 401, {
        type: 'authentication_error',
        code: 'invalid_api_key',
        message: 'Invalid API key provided',
      });
    }
    const basic = await send(gw, 'GET', '/v1/credits', { headers: { authorization: 'Basic dXNlcjpwYXNz' } });
    expect(basic.status).toBe(401);
    expect(['missing_api_key', 'invalid_api_key']).toContain(basic.body.error.code);
  });

  it('permissions: read_only keys cannot chat; project keys only their models', async () => {
    const { key: readOnly } = await gw.key(accountId, { permissions: 'read_only' });
    expectEnvelope(await chat(gw, readOnly, { model: 'sandbox/echo', messages: hello }), 403, {
      type: 'permission_error',
      code: 'permission_denied',
    });

    const { key: project } = await gw.key(accountId, { permissions: 'project', models: ['sandbox/lorem'] });
    expectEnvelope(await chat(gw, project, { model: 'sandbox/echo', messages: hello }), 403, {
      type: 'permission_error',
      code: 'permission_denied',
    });
    const allowed = await chat(gw, project, { model: 'sandbox/lorem', messages: hello });
    expect(allowed.status, allowed.text).toBe(200);
  });

  it('unknown model is 404 model_not_found with param model', async () => {
    expectEnvelope(await chat(gw, liveKey, { model: 'no-such-model', messages: hello }), 404, {
      type: 'invalid_request_error',
      code: 'model_not_found',
      param: 'model',
    });
  });

  it('a model whose provider is not configured: 503 for live keys, answered by the sandbox for test keys', async () => {
    const listed = await send(gw, 'GET', '/v1/models?active_only=false', { key: liveKey });
    const inactive = listed.body.data.find((m: any) => !m.status.active && m.provider.id === 'openai');
    expect(inactive).toBeDefined();
    expectEnvelope(await chat(gw, liveKey, { model: inactive.id, messages: hello }), 503, {
      type: 'service_unavailable',
      code: 'model_unavailable',
    });
    const sandboxed = await chat(gw, testKey, { model: inactive.id, messages: hello });
    expect(sandboxed.status, sandboxed.text).toBe(200);
    expect(sandboxed.body.object).toBe('chat.completion');
    expect(sandboxed.body.model).toBe(inactive.id);
    expect(typeof sandboxed.body.choices[0].message.content).toBe('string');
    expect(sandboxed.body.usage.cost).toBe(0);
  });

  it('prompt over context_length is 400 context_length_exceeded; max_tokens above the model max is 400 param max_tokens', async () => {
    const long = 'lorem ipsum dolor sit amet '.repeat(40);
    expectEnvelope(await chat(gw, liveKey, { model: 'tiny', messages: [{ role: 'user', content: long }] }), 400, {
      type: 'invalid_request_error',
      code: 'context_length_exceeded',
    });
    expectEnvelope(await chat(gw, liveKey, { model: 'tiny', messages: hello, max_tokens: 21 }), 400, {
      type: 'invalid_request_error',
      code: 'invalid_request',
      param: 'max_tokens',
    });
    const ok = await chat(gw, liveKey, { model: 'tiny', messages: hello, max_tokens: 20 });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.usage.completion_tokens).toBeLessThanOrEqual(20);
  });

  it('/health and /ready answer without a key', async () => {
    const health = await send(gw, 'GET', '/health');
    expect(health.status).toBe(200);
    const ready = await send(gw, 'GET', '/ready');
    expect(ready.status).toBe(200);
  });

  it('/metrics takes the admin token and serves Prometheus text', async () => {
    const none = await send(gw, 'GET', '/metrics');
    expect(none.status).toBe(401);
    expect(none.body.error.type).toBe('authentication_error');
    expect(['missing_api_key', 'invalid_api_key']).toContain(none.body.error.code);
    const customer = await send(gw, 'GET', '/metrics', { key: liveKey });
    expect(customer.status).toBe(401);
    const admin = await send(gw, 'GET', '/metrics', { key: ADMIN_TOKEN });
    expect(admin.status).toBe(200);
    expect(admin.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(admin.text).toMatch(/tollgate_requests_total|tollgate_tokens_total/);
  });
});
