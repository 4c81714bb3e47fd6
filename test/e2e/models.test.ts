/** GET /v1/models and GET /v1/models/{id}, through the official `openai` SDK and raw HTTP. */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type TestGateway } from '../support/gateway.js';

const CAPABILITY_KEYS = ['chat', 'completion', 'function_calling', 'vision', 'embeddings', 'json_mode'] as const;

async function get(gw: TestGateway, path: string, key: string | undefined) {
  const response = await fetch(`${gw.url}${path}`, { headers: key ? { authorization: `Bearer ${key}` } : {} });
  return { status: response.status, headers: response.headers, body: (await response.json()) as any };
}

function expectModelShape(model: any): void {
  expect(model).toMatchObject({
    id: expect.any(String),
    object: 'model',
    created: expect.any(Number),
    owned_by: expect.any(String),
    provider: { id: expect.any(String), name: expect.any(String) },
    pricing: { prompt: expect.any(Number), completion: expect.any(Number), unit: '1k_tokens' },
    context_length: expect.any(Number),
    max_tokens: expect.any(Number),
    status: { active: expect.any(Boolean), message: expect.any(String) },
  });
  expect(Number.isInteger(model.created)).toBe(true);
  expect(Number.isInteger(model.context_length)).toBe(true);
  expect(Number.isInteger(model.max_tokens)).toBe(true);
  expect(model.owned_by).toBe(model.provider.id);
  expect(Object.keys(model.capabilities).sort()).toEqual([...CAPABILITY_KEYS].sort());
  for (const k of CAPABILITY_KEYS) expect(typeof model.capabilities[k]).toBe('boolean');
  expect(Object.keys(model.performance).sort()).toEqual([
    'avg_response_time',
    'avg_tokens_per_second',
    'uptime_percentage',
  ]);
  for (const value of Object.values(model.performance)) expect(value === null || typeof value === 'number').toBe(true);
}

function expectOrdered(models: any[]): void {
  const pairs = models.map((m) => [m.provider.id as string, m.id as string] as const);
  const sorted = [...pairs].sort((a, b) =>
    a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0,
  );
  expect(pairs).toEqual(sorted);
}

describe('GET /v1/models (no providers configured)', () => {
  let gw: TestGateway;
  let client: OpenAI;
  let all: any[];
  beforeAll(async () => {
    gw = await startGateway();
    client = gw.client(gw.firstKey);
    const response = await get(gw, '/v1/models?active_only=false', gw.firstKey);
    expect(response.status).toBe(200);
    all = response.body.data;
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('requires a key: missing_api_key through the SDK', async () => {
    // The SDK insists on an apiKey; dropping the Authorization header sends the request without any key.
    const anonymous = gw.client('unused', { defaultHeaders: { Authorization: null } });
    const error = await anonymous.models.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.AuthenticationError);
    const authError = error as InstanceType<typeof OpenAI.AuthenticationError>;
    expect(authError.status).toBe(401);
    expect(authError.code).toBe('missing_api_key');
    expect(authError.type).toBe('authentication_error');

    const raw = await get(gw, '/v1/models', undefined);
    expect(raw.status).toBe(401);
    expect(raw.body.error).toMatchObject({
      code: 'missing_api_key',
      message: 'No API key provided',
      type: 'authentication_error',
    });

    const bad = await gw
      .client('tg-live-00000000000000000000000000000000')
      .models.list()
      .catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((bad as InstanceType<typeof OpenAI.AuthenticationError>).code).toBe('invalid_api_key');
  });

  it('lists only active models by default: the sandbox ones, no unconfigured providers', async () => {
    const page = await client.models.list();
    const ids = page.data.map((m) => m.id);
    expect(ids).toContain('sandbox/echo');
    expect(ids).toContain('sandbox/lorem');
    expect(page.data.every((m) => (m as any).status.active === true)).toBe(true);
    expect(page.data.some((m) => (m as any).provider.id === 'openai')).toBe(false);
    const raw = await get(gw, '/v1/models', gw.firstKey);
    expect(raw.body.object).toBe('list');
    expect(raw.body.data.map((m: any) => m.id)).toEqual(ids);
    for (const model of raw.body.data) expectModelShape(model);
  });

  it('active_only=false includes inactive models whose message names the env var to set', async () => {
    expect(all.length).toBeGreaterThan(2);
    const openai = all.filter((m) => m.provider.id === 'openai');
    expect(openai.length).toBeGreaterThan(0);
    for (const model of openai) {
      expect(model.status.active).toBe(false);
      expect(model.status.message).toContain('OPENAI_API_KEY');
    }
    const anthropic = all.filter((m) => m.provider.id === 'anthropic');
    for (const model of anthropic) expect(model.status.message).toContain('ANTHROPIC_API_KEY');
    for (const model of all) expectModelShape(model);
    const active = all.filter((m) => m.status.active).map((m) => m.id);
    const listed = (await client.models.list()).data.map((m) => m.id);
    expect(listed).toEqual(active);
  });

  it('orders by provider.id, then id', async () => {
    expectOrdered(all);
    expectOrdered((await get(gw, '/v1/models', gw.firstKey)).body.data);
  });

  it('every model has pricing per 1k tokens and the six capability booleans', () => {
    for (const model of all) {
      expect(model.pricing.unit).toBe('1k_tokens');
      expect(model.pricing.prompt).toBeGreaterThanOrEqual(0);
      expect(model.pricing.completion).toBeGreaterThanOrEqual(0);
      expect(model).not.toHaveProperty('modalities');
      expect(model).not.toHaveProperty('supported_parameters');
    }
  });

  it('filters by provider', async () => {
    const openai = await get(gw, '/v1/models?active_only=false&provider=openai', gw.firstKey);
    expect(openai.status).toBe(200);
    expect(openai.body.data.length).toBeGreaterThan(0);
    expect(openai.body.data.every((m: any) => m.provider.id === 'openai')).toBe(true);
    expect(openai.body.data.length).toBe(all.filter((m) => m.provider.id === 'openai').length);

    const sandbox = await get(gw, '/v1/models?provider=sandbox', gw.firstKey);
    expect(sandbox.body.data.map((m: any) => m.id)).toEqual(['sandbox/echo', 'sandbox/embed', 'sandbox/lorem']);

    const nobody = await get(gw, '/v1/models?provider=nobody', gw.firstKey);
    expect(nobody.status).toBe(200);
    expect(nobody.body.data).toEqual([]);
  });

  it('filters by capability (chat, image = vision, embedding = embeddings) and refuses other values', async () => {
    const cases: Array<[string, (typeof CAPABILITY_KEYS)[number]]> = [
      ['chat', 'chat'],
      ['completion', 'completion'],
      ['image', 'vision'],
      ['vision', 'vision'],
      ['embedding', 'embeddings'],
      ['embeddings', 'embeddings'],
      ['function_calling', 'function_calling'],
      ['json_mode', 'json_mode'],
    ];
    for (const [value, key] of cases) {
      const response = await get(gw, `/v1/models?active_only=false&capability=${value}`, gw.firstKey);
      expect(response.status, value).toBe(200);
      expect(
        response.body.data.map((m: any) => m.id),
        value,
      ).toEqual(all.filter((m) => m.capabilities[key]).map((m) => m.id));
    }
    // The filter actually filters: some model lacks vision.
    expect(all.some((m) => !m.capabilities.vision)).toBe(true);

    for (const value of ['images', 'CHAT', 'audio', '']) {
      const response = await get(gw, `/v1/models?capability=${encodeURIComponent(value)}`, gw.firstKey);
      expect(response.status, value).toBe(400);
      expect(response.body.error, value).toMatchObject({
        type: 'invalid_request_error',
        code: 'invalid_request',
        param: 'capability',
      });
    }
  });

  it('include_capabilities=true adds modalities and supported_parameters', async () => {
    const response = await get(gw, '/v1/models?include_capabilities=true', gw.firstKey);
    expect(response.status).toBe(200);
    for (const model of response.body.data) {
      expectModelShape(model);
      expect(model.modalities).toEqual({
        input: expect.arrayContaining(['text']),
        output: expect.arrayContaining(['text']),
      });
      expect(Array.isArray(model.supported_parameters)).toBe(true);
      expect(model.supported_parameters).toEqual(
        expect.arrayContaining(['messages', 'model', 'max_tokens', 'temperature', 'stream']),
      );
      if (model.capabilities.vision) expect(model.modalities.input).toContain('image');
      if (model.capabilities.function_calling) expect(model.supported_parameters).toContain('tools');
      if (model.capabilities.json_mode) expect(model.supported_parameters).toContain('response_format');
    }
    const plain = await get(gw, '/v1/models?include_capabilities=false', gw.firstKey);
    for (const model of plain.body.data) expect(model).not.toHaveProperty('modalities');
  });

  it('booleans accept only true/false; anything else is a 400 naming the parameter', async () => {
    for (const name of ['active_only', 'include_capabilities']) {
      for (const value of ['1', 'yes', 'TRUE', '']) {
        const response = await get(gw, `/v1/models?${name}=${value}`, gw.firstKey);
        expect(response.status, `${name}=${value}`).toBe(400);
        expect(response.body.error, `${name}=${value}`).toMatchObject({ code: 'invalid_request', param: name });
        expect(response.body.error.message).toContain(name);
      }
    }
  });

  it('retrieve: by id, by alias (returns the versioned id), unknown is 404 model_not_found', async () => {
    const echo = await client.models.retrieve('sandbox/echo');
    expect(echo.id).toBe('sandbox/echo');
    expect(echo.object).toBe('model');

    const aliased = all.find((m) => Array.isArray(m.aliases) && m.aliases.length > 0);
    expect(aliased).toBeDefined();
    const viaAlias = await client.models.retrieve(aliased.aliases[0]);
    expect(viaAlias.id).toBe(aliased.id);
    expect(viaAlias.id).not.toBe(aliased.aliases[0]);

    const missing = await client.models.retrieve('no-such-model').catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    const notFound = missing as InstanceType<typeof OpenAI.NotFoundError>;
    expect(notFound.status).toBe(404);
    expect(notFound.code).toBe('model_not_found');
    expect(notFound.param).toBe('model');

    const noKey = await get(gw, '/v1/models/sandbox/echo', undefined);
    expect(noKey.status).toBe(401);
    expect(noKey.body.error.code).toBe('missing_api_key');
  });

  it('retrieve: the id is decoded once (an escaped % or / is part of the id, never a 500)', async () => {
    for (const path of ['/v1/models/%25', '/v1/models/%25zz', '/v1/models/100%25', '/v1/models/a%252Fb']) {
      const sent = await get(gw, path, gw.firstKey);
      expect(sent.status, `${path}: ${JSON.stringify(sent.body)}`).toBe(404);
      expect(sent.body.error.code).toBe('model_not_found');
    }
    const escaped = await get(gw, '/v1/models/sandbox%2Fecho', gw.firstKey);
    expect([escaped.status, escaped.body.id]).toEqual([200, 'sandbox/echo']);
  });

  it('read_only and project keys can list models', async () => {
    const { id } = await gw.account();
    for (const options of [
      { permissions: 'read_only' },
      { permissions: 'project', models: ['sandbox/lorem'] },
      { environment: 'test' },
    ]) {
      const { key } = await gw.key(id, options);
      const page = await gw.client(key).models.list();
      expect(
        page.data.map((m) => m.id),
        JSON.stringify(options),
      ).toContain('sandbox/echo');
      const one = await gw.client(key).models.retrieve('sandbox/lorem');
      expect(one.id).toBe('sandbox/lorem');
    }
  });

  it('performance is null before traffic and measured after a chat completion', async () => {
    const before = (await get(gw, '/v1/models', gw.firstKey)).body.data.find((m: any) => m.id === 'sandbox/echo');
    expect(before.performance).toEqual({
      avg_response_time: null,
      avg_tokens_per_second: null,
      uptime_percentage: null,
    });

    const completion = await client.chat.completions.create({
      model: 'sandbox/echo',
      messages: [{ role: 'user', content: 'measure me please' }],
    });
    expect(completion.choices[0]!.message.content).toBeTruthy();

    const after = (await get(gw, '/v1/models', gw.firstKey)).body.data.find((m: any) => m.id === 'sandbox/echo');
    expect(typeof after.performance.avg_response_time).toBe('number');
    expect(after.performance.avg_response_time).toBeGreaterThan(0);
    expect(after.performance.uptime_percentage).toBe(100);
    expect(after.performance.avg_tokens_per_second === null || after.performance.avg_tokens_per_second > 0).toBe(true);
    // The other sandbox model saw no traffic.
    const lorem = (await get(gw, '/v1/models', gw.firstKey)).body.data.find((m: any) => m.id === 'sandbox/lorem');
    expect(lorem.performance.avg_response_time).toBeNull();
  });
});

describe('GET /v1/models with OPENAI_API_KEY set', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ env: { OPENAI_API_KEY: 'sk-test' } });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('openai models become active and are listed by default', async () => {
    const page = await gw.client(gw.firstKey).models.list();
    const openai = page.data.filter((m) => (m as any).provider.id === 'openai');
    expect(openai.length).toBeGreaterThan(0);
    for (const model of openai) expect((model as any).status.active).toBe(true);
    expect(page.data.some((m) => (m as any).provider.id === 'anthropic')).toBe(false);
    const filtered = await get(gw, '/v1/models?provider=openai', gw.firstKey);
    expect(filtered.body.data.map((m: any) => m.id)).toEqual(openai.map((m) => m.id));
    expectOrdered(page.data);
  });
});
