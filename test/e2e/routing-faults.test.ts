/**
 * Fault tests of routing: a model with two deployments (Anthropic first, Gemini second, each a local server in
 * its provider's wire format). The first fails in every way; the answer still comes from the second, charged once.
 * Circuit breakers, probes, status, live figures, request-level fallback models and timeouts.
 */
import { createServer, type AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { APIError } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { defaultConfig, type ModelConfig } from '../../src/config/index.js';
import { DEFAULT_MODELS } from '../../src/config/default-catalog.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { ANTHROPIC_TEXT, startMockAnthropic, type MockAnthropic } from '../support/mock-anthropic.js';
import { GEMINI_TEXT, startMockGemini, type MockGemini } from '../support/mock-gemini.js';

const COOLDOWN_MS = 800;
let anthropic: MockAnthropic;
let gemini: MockGemini;
let gw: TestGateway;
/** An enterprise key: these tests make more requests than the free plan's 60 a minute. */
let heavy: string;

const base = DEFAULT_MODELS.find((m) => m.id === 'claude-haiku-5-5')!;
const routed = (
  id: string,
  deployments: ModelConfig['deployments'],
  extra: Partial<ModelConfig> = {},
): ModelConfig => ({ ...base, id, name: id, deployments, ...extra });
const AG = [
  { provider: 'anthropic', upstream_model: 'claude-test' },
  { provider: 'gemini', upstream_model: 'gemini-test' },
];
/** One model per scenario, so that their circuit breakers do not meet. */
const MODELS = [
  'm-500',
  'm-timeout',
  'm-stream',
  'm-stream-open',
  'm-400',
  'm-breaker',
  'm-all-down',
  'm-single',
  'm-deadline',
].map((id) => routed(id, AG));
const DEAD = routed('m-refused', [
  { provider: 'dead', upstream_model: 'claude-test' },
  { provider: 'gemini', upstream_model: 'gemini-test' },
]);
/** Only weighted deployments are drawn for the first attempt: Gemini always goes first here. */
const WEIGHTED = routed('m-weighted', [
  { provider: 'anthropic', upstream_model: 'claude-test' },
  { provider: 'gemini', upstream_model: 'gemini-test', weight: 1 },
]);
const SPLIT = routed('m-split', [
  { provider: 'anthropic', upstream_model: 'claude-test', weight: 1 },
  { provider: 'gemini', upstream_model: 'gemini-test', weight: 3 },
]);
const CHEAP = routed('m-cheap', [{ provider: 'gemini', upstream_model: 'gemini-test' }], {
  pricing: { prompt: 0.00001, completion: 0.00002 },
});
const ONLY_A = routed('m-only-anthropic', [{ provider: 'anthropic', upstream_model: 'claude-test' }]);

const nano = (usd: number) => BigInt(Math.round(usd * 1e9));
const costNano = (pricing: { prompt: number; completion: number }, prompt: number, completion: number) =>
  (BigInt(prompt) * nano(pricing.prompt) + BigInt(completion) * nano(pricing.completion) + 999n) / 1000n;
const user = [{ role: 'user' as const, content: 'Hello?' }];

async function until(condition: () => Promise<boolean>, timeoutMs = 3_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(25);
  }
}
async function apiError(promise: Promise<unknown>): Promise<APIError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(APIError);
  return error as APIError;
}
async function model(id: string): Promise<any> {
  const res = await fetch(`${gw.baseURL}/models/${id}`, { headers: { authorization: `Bearer ${heavy}` } });
  return res.json();
}
/** The debits of an account and its balance, from the ledger. */
async function debits(accountId: string): Promise<{ debits: any[]; balance: bigint }> {
  const ledger = await gw.admin('GET', `/admin/accounts/${accountId}/ledger?limit=500`);
  const account = await gw.admin('GET', `/admin/accounts/${accountId}`);
  return {
    debits: ledger.body.data.filter((e: any) => e.kind === 'debit'),
    balance: nano(account.body.balance.credits),
  };
}
/** Makes a request through the SDK and checks it was answered by Gemini and charged exactly once. */
async function answeredBySecond(modelId: string, stream = false): Promise<void> {
  const { id, key } = await gw.account({ plan: 'enterprise' });
  const start = (await debits(id)).balance;
  const client = gw.client(key);
  let text = '';
  let usage: any;
  let providerHeader: string | null;
  if (stream) {
    const { data, response } = await client.chat.completions
      .create({ model: modelId, messages: user, stream: true, stream_options: { include_usage: true } })
      .withResponse();
    providerHeader = response.headers.get('x-tollgate-provider');
    for await (const chunk of data) {
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
  } else {
    const { data, response } = await client.chat.completions.create({ model: modelId, messages: user }).withResponse();
    providerHeader = response.headers.get('x-tollgate-provider');
    text = data.choices[0]!.message.content!;
    usage = data.usage;
  }
  expect(providerHeader).toBe('gemini');
  expect(text).toBe(GEMINI_TEXT);
  const after = await debits(id);
  expect(after.debits.length).toBe(1);
  expect(start - after.balance).toBe(costNano(base.pricing, usage.prompt_tokens, usage.completion_tokens));
  expect(nano(usage.cost)).toBe(start - after.balance);
}

beforeAll(async () => {
  anthropic = await startMockAnthropic({ apiKey: 'ka' });
  gemini = await startMockGemini({ apiKey: 'kg' });
  const port = await new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
  gw = await startGateway({
    env: {
      ANTHROPIC_API_KEY: 'ka',
      ANTHROPIC_BASE_URL: anthropic.url,
      GEMINI_API_KEY: 'kg',
      GEMINI_BASE_URL: gemini.url,
    },
    overrides: {
      server: { ...defaultConfig().server, port: 0, host: '127.0.0.1', upstream_timeout_ms: 400 },
      providers: { dead: { api: 'anthropic', base_url: `http://127.0.0.1:${port}/v1`, api_key: 'kd' } },
      routing: {
        retries: 1,
        backoff_ms: 20,
        max_backoff_ms: 50,
        breaker_failures: 4,
        breaker_cooldown_ms: COOLDOWN_MS,
      },
      models: [...MODELS, DEAD, WEIGHTED, SPLIT, CHEAP, ONLY_A],
    },
  });
  heavy = (await gw.account({ plan: 'enterprise' })).key;
});
afterAll(async () => {
  await gw?.close();
  await anthropic?.close();
  await gemini?.close();
});
beforeEach(() => {
  anthropic.setBehavior({ kind: 'ok' });
  anthropic.setProbeStatus(200);
  gemini.setBehavior({ kind: 'ok' });
});

describe('fallback to the second deployment', () => {
  it('the first answers 500 (retried once with backoff): the answer comes from the second, charged once', async () => {
    const before = anthropic.requests.length;
    anthropic.setBehavior({ kind: 'error', status: 500 });
    await answeredBySecond('m-500');
    expect(anthropic.requests.length - before).toBe(2);
  });

  it('the first times out', async () => {
    anthropic.setBehavior({ kind: 'hang' });
    const started = Date.now();
    await answeredBySecond('m-timeout');
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it('the first refuses connections', async () => {
    await answeredBySecond('m-refused');
    await answeredBySecond('m-refused', true);
  });

  it('streaming: the first fails before its first byte, the second streams', async () => {
    anthropic.setBehavior({ kind: 'error', status: 529, type: 'overloaded_error' });
    await answeredBySecond('m-stream', true);
  });

  it('streaming: an error event right after the stream opened (before any text) is still retried, then falls back', async () => {
    // Anthropic's overloaded_error can arrive after a 200 and message_start: nothing of the answer has reached the
    // client yet, so the same deployment is retried...
    const a = anthropic.requests.length;
    anthropic.enqueue({ kind: 'stream-error', afterDeltas: 0, type: 'overloaded_error' });
    const { data, response } = await gw
      .client(heavy)
      .chat.completions.create({ model: 'm-stream-open', messages: user, stream: true })
      .withResponse();
    let text = '';
    for await (const chunk of data) text += chunk.choices[0]?.delta.content ?? '';
    expect([response.headers.get('x-tollgate-provider'), text]).toEqual(['anthropic', ANTHROPIC_TEXT]);
    expect(anthropic.requests.length - a).toBe(2);
    // ...and when it keeps failing, the next deployment answers, charged once.
    anthropic.setBehavior({ kind: 'stream-error', afterDeltas: 0, type: 'overloaded_error' });
    await answeredBySecond('m-stream-open', true);
  });

  it('a 400 (the request is wrong) is not retried nor sent elsewhere', async () => {
    const a = anthropic.requests.length;
    const g = gemini.requests.length;
    anthropic.setBehavior({ kind: 'error', status: 400, message: 'messages: bad' });
    const error = await apiError(gw.client(heavy).chat.completions.create({ model: 'm-400', messages: user }));
    expect([error.status, error.code]).toEqual([400, 'invalid_request']);
    expect([anthropic.requests.length - a, gemini.requests.length - g]).toEqual([1, 0]);
  });

  it('weights choose the first deployment', async () => {
    const a = anthropic.requests.length;
    for (let i = 0; i < 5; i++) await answeredBySecond('m-weighted');
    expect(anthropic.requests.length).toBe(a);
    // 1 : 3 over 60 requests: about 15 to Anthropic (fewer than 3 or more than 30 is vanishingly unlikely).
    const counts: Record<string, number> = {};
    for (let i = 0; i < 60; i++) {
      const { response } = await gw
        .client(heavy)
        .chat.completions.create({ model: 'm-split', messages: user })
        .withResponse();
      const provider = response.headers.get('x-tollgate-provider')!;
      counts[provider] = (counts[provider] ?? 0) + 1;
    }
    expect(counts.anthropic).toBeGreaterThanOrEqual(3);
    expect(counts.anthropic).toBeLessThanOrEqual(30);
    expect(counts.anthropic! + counts.gemini!).toBe(60);
  });
});

describe('circuit breakers, probes and status', () => {
  it('4 failures open the circuit: the deployment is skipped, status says degraded; a probe brings it back', async () => {
    anthropic.setBehavior({ kind: 'error', status: 503 });
    await answeredBySecond('m-breaker');
    await answeredBySecond('m-breaker'); // 4 failed attempts: open
    const a = anthropic.requests.length;
    await answeredBySecond('m-breaker');
    expect(anthropic.requests.length).toBe(a); // skipped while open
    const degraded = await model('m-breaker');
    expect(degraded.status.active).toBe(true);
    expect(degraded.status.message).toMatch(/degraded: anthropic: HTTP 503/);
    expect(degraded.performance.uptime_percentage).toBeLessThan(100);

    anthropic.setBehavior({ kind: 'ok' });
    await sleep(COOLDOWN_MS);
    await until(async () => (await model('m-breaker')).status.message === 'Available');
    expect(anthropic.requests.at(-1)!.path).toBe('/v1/models?limit=1'); // the health probe closed it
    const { data, response } = await gw
      .client(heavy)
      .chat.completions.create({ model: 'm-breaker', messages: user })
      .withResponse();
    expect(response.headers.get('x-tollgate-provider')).toBe('anthropic');
    expect(data.choices[0]!.message.content).toBe(ANTHROPIC_TEXT);
  });

  it('every deployment failing: inactive with the reason, 503 model_unavailable, back after the probes', async () => {
    const id = 'm-all-down';
    anthropic.setBehavior({ kind: 'error', status: 500 });
    anthropic.setProbeStatus(529);
    gemini.setBehavior({ kind: 'error', status: 503 });
    for (let i = 0; i < 2; i++) {
      const error = await apiError(gw.client(heavy).chat.completions.create({ model: id, messages: user }));
      expect([error.status, error.code]).toEqual([502, 'upstream_error']);
    }
    const down = await model(id);
    expect(down.status.active).toBe(false);
    expect(down.status.message).toMatch(/anthropic: HTTP 500.*gemini: HTTP 503/);
    const listed = await fetch(`${gw.baseURL}/models`, { headers: { authorization: `Bearer ${heavy}` } }).then(
      (r) => r.json() as any,
    );
    expect(listed.data.some((m: any) => m.id === id)).toBe(false);
    const unavailable = await apiError(gw.client(heavy).chat.completions.create({ model: id, messages: user }));
    expect([unavailable.status, unavailable.code]).toEqual([503, 'model_unavailable']);

    // Gemini's probe succeeds after the cool-down; Anthropic's fails and stays out.
    gemini.setBehavior({ kind: 'ok' });
    await sleep(COOLDOWN_MS);
    await until(async () => (await model(id)).status.active === true);
    const back = await model(id);
    expect(back.status.active).toBe(true);
    expect(back.status.message).toMatch(/degraded: anthropic: health probe failed/);
    await answeredBySecond(id);
  });

  it('live figures come from real traffic: response time in seconds, tokens per second, uptime', async () => {
    const before = await model('m-single');
    expect(before.performance).toEqual({
      avg_response_time: null,
      avg_tokens_per_second: null,
      uptime_percentage: null,
    });
    anthropic.setBehavior({ kind: 'ok', latencyMs: 120 });
    await gw.client(heavy).chat.completions.create({ model: 'm-single', messages: user });
    const after = await model('m-single');
    expect(after.performance.avg_response_time).toBeGreaterThanOrEqual(0.12);
    expect(after.performance.avg_response_time).toBeLessThan(2);
    expect(after.performance.avg_tokens_per_second).toBeGreaterThan(0);
    expect(after.performance.uptime_percentage).toBe(100);
  });
});

describe('request-level fallback models and timeout', () => {
  it('`models`: the next model answers when the first fails; the response names it and it is charged at its price', async () => {
    const { id, key } = await gw.account();
    const start = (await debits(id)).balance;
    anthropic.setBehavior({ kind: 'error', status: 500 });
    const { data, response } = await gw
      .client(key)
      .chat.completions.create({ model: 'm-only-anthropic', messages: user, models: ['m-cheap'] } as any)
      .withResponse();
    expect(response.headers.get('x-tollgate-provider')).toBe('gemini');
    expect(data.model).toBe('m-cheap');
    const usage = data.usage!;
    const after = await debits(id);
    expect(after.debits.length).toBe(1);
    expect(after.debits[0].model).toBe('m-cheap');
    expect(start - after.balance).toBe(costNano(CHEAP.pricing, usage.prompt_tokens, usage.completion_tokens));
    // Neither field reaches an upstream.
    expect(gemini.requests.at(-1)!.body.models).toBeUndefined();
  });

  it('an unknown fallback model is a 404 naming `models`', async () => {
    const error = await apiError(
      gw.client(heavy).chat.completions.create({ model: 'm-only-anthropic', messages: user, models: ['nope'] } as any),
    );
    expect([error.status, error.code, error.param]).toEqual([404, 'model_not_found', 'models']);
  });

  it('`timeout_ms` bounds the whole request, retries and fallbacks included: 504', async () => {
    anthropic.setBehavior({ kind: 'hang' });
    gemini.setBehavior({ kind: 'hang' });
    const started = Date.now();
    const error = await apiError(
      gw.client(heavy).chat.completions.create({ model: 'm-deadline', messages: user, timeout_ms: 250 } as any),
    );
    expect([error.status, error.code]).toEqual([504, 'upstream_timeout']);
    expect(Date.now() - started).toBeLessThan(600);
    // It bounds the start of the answer only: a stream that starts in time may run longer.
    anthropic.setBehavior({ kind: 'ok', delayMs: 60 });
    const stream = await gw
      .client(heavy)
      .chat.completions.create({ model: 'm-deadline', messages: user, stream: true, timeout_ms: 250 } as any);
    let text = '';
    for await (const chunk of stream as any) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe(ANTHROPIC_TEXT);
    const bad = await apiError(
      gw.client(heavy).chat.completions.create({ model: 'm-deadline', messages: user, timeout_ms: 0 } as any),
    );
    expect([bad.status, bad.param]).toEqual([400, 'timeout_ms']);
  });
});
