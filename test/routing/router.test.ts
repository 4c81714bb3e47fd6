/** The router on its own: breaker states, which failures are retried, backoff, and calls against a local server. */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Catalog } from '../../src/catalog/index.js';
import { loadConfig, type RoutingConfig } from '../../src/config/index.js';
import { UpstreamError, type ProviderCall } from '../../src/providers/index.js';
import { backoffMs } from '../../src/routing/attempts.js';
import { Breaker, Router, chatStreamWay, chatWay, verdict, type Route, type Routed } from '../../src/routing/index.js';
import { startMockAnthropic, type MockAnthropic } from '../support/mock-anthropic.js';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.js';

/** A chat call through the router, as the gateway makes one: for the whole answer, or as a stream. */
const complete = (router: Router, route: Route, c: ProviderCall) => router.run(route, c, chatWay(c.body));
const stream = (router: Router, route: Route, c: ProviderCall) => router.run(route, c, chatStreamWay(c.body));

describe('Breaker', () => {
  it('opens after the threshold, is half-open after the cool-down, reopens on one more fault, closes on success', () => {
    const breaker = new Breaker(3, 1_000);
    expect(breaker.failure('x', 0)).toBe(false);
    expect(breaker.failure('x', 0)).toBe(false);
    expect(breaker.state(0)).toBe('closed');
    expect(breaker.failure('boom', 10)).toBe(true);
    expect([breaker.state(500), breaker.allows(500), breaker.remainingMs(500)]).toEqual(['open', false, 510]);
    expect([breaker.state(1_010), breaker.allows(1_010)]).toEqual(['half-open', true]);
    expect(breaker.failure('again', 1_010)).toBe(true);
    expect(breaker.state(1_500)).toBe('open');
    expect(breaker.reason).toBe('again');
    breaker.success();
    expect([breaker.state(1_500), breaker.reason]).toEqual(['closed', '']);
    // A success resets the count: two more faults do not open it.
    breaker.failure('x', 2_000);
    breaker.failure('x', 2_000);
    expect(breaker.state(2_000)).toBe('closed');
  });
});

describe('verdict and backoff', () => {
  const http = (status: number) => new UpstreamError('p', 'http', 'm', { status });
  it('retries transport faults, 429 and 5xx; moves on after 401/403/404; stops on the client 400s', () => {
    expect(verdict(new UpstreamError('p', 'connection', 'm'))).toBe('retry');
    expect(verdict(new UpstreamError('p', 'timeout', 'm'))).toBe('retry');
    expect(verdict(new UpstreamError('p', 'protocol', 'm'))).toBe('retry');
    for (const status of [429, 500, 502, 503, 529]) expect(verdict(http(status))).toBe('retry');
    for (const status of [401, 403, 404]) expect(verdict(http(status))).toBe('next');
    for (const status of [400, 413, 422]) expect(verdict(http(status))).toBe('stop');
  });

  it('backoff doubles up to the cap, with 50-100 % jitter', () => {
    for (let i = 0; i < 50; i++) {
      const first = backoffMs(0, 100, 1_000);
      const third = backoffMs(2, 100, 1_000);
      const capped = backoffMs(8, 100, 1_000);
      expect(first).toBeGreaterThanOrEqual(50);
      expect(first).toBeLessThanOrEqual(100);
      expect(third).toBeGreaterThanOrEqual(200);
      expect(third).toBeLessThanOrEqual(400);
      expect(capped).toBeLessThanOrEqual(1_000);
    }
  });
});

/** A router and its catalog over the providers these environment variables configure. */
function routerFor(env: Record<string, string>, routing: RoutingConfig): { router: Router; catalog: Catalog } {
  const config = loadConfig({
    env: { ...env, TOLLGATE_DATA_DIR: '/tmp/unused' },
    file: undefined,
    overrides: { routing },
  });
  const catalog = new Catalog(config);
  const router = new Router(config, { catalog });
  catalog.setHealth(router.health);
  return { router, catalog };
}

/** The answer of a routed call that must have succeeded. */
function answerOf<T>(routed: Routed<T>): T {
  if (!routed.ok) throw routed.error;
  return routed.result;
}

const call = (signal = new AbortController().signal, extra: Record<string, unknown> = {}): ProviderCall => ({
  body: { model: 'x', messages: [{ role: 'user', content: 'Hi' }], ...extra },
  signal,
  requestId: 'r',
  timeoutMs: 2_000,
});

describe('Router against a local Anthropic server', () => {
  let mock: MockAnthropic;
  let router: Router;
  let catalog: Catalog;

  beforeAll(async () => {
    mock = await startMockAnthropic({ apiKey: 'k' });
    ({ router, catalog } = routerFor(
      { ANTHROPIC_API_KEY: 'k', ANTHROPIC_BASE_URL: mock.url },
      { retries: 2, backoff_ms: 300, max_backoff_ms: 300, breaker_failures: 10, breaker_cooldown_ms: 1_000 },
    ));
  });
  afterAll(async () => {
    await router.close();
    await mock.close();
  });
  beforeEach(() => mock.setBehavior({ kind: 'ok' }));

  it('sends the deployment model name and the model max_tokens; retries a 529 and then answers', async () => {
    const model = catalog.resolve('claude-haiku-5-5');
    const before = mock.requests.length;
    mock.enqueue({ kind: 'error', status: 529 });
    const route = router.route(model, 'live');
    const routed = await complete(router, route, call());
    expect(answerOf(routed).choices[0]!.message.content).toBeTruthy();
    expect(routed.providerId).toBe('anthropic');
    expect(mock.requests.length - before).toBe(2);
    expect(mock.requests.at(-1)!.body).toMatchObject({ model: 'claude-haiku-5-5', max_tokens: model.maxTokens });
  });

  it('a client that goes away during the backoff ends the request at once, without another attempt', async () => {
    const model = catalog.resolve('claude-haiku-5-5');
    mock.setBehavior({ kind: 'error', status: 500 });
    const before = mock.requests.length;
    const controller = new AbortController();
    const started = Date.now();
    const pending = complete(router, router.route(model, 'live'), call(controller.signal));
    setTimeout(() => controller.abort(), 50);
    expect((await pending).ok).toBe(false);
    expect(Date.now() - started).toBeLessThan(250);
    expect(mock.requests.length - before).toBe(1);
  });

  it('test keys go to the sandbox whatever the model', async () => {
    const route = router.route(catalog.resolve('claude-haiku-5-5'), 'test');
    expect(route.providerId).toBe('sandbox');
    const routed = await complete(router, route, call());
    expect(routed.providerId).toBe('sandbox');
    expect(answerOf(routed).choices[0]!.message.content).toBe('Hi');
  });
});

describe('errors of our own making are not provider failures', () => {
  let mock: MockOpenAI;
  let router: Router;
  let catalog: Catalog;

  beforeAll(async () => {
    mock = await startMockOpenAI({ apiKey: 'k' });
    // One counted failure would open the circuit.
    ({ router, catalog } = routerFor(
      { OPENAI_API_KEY: 'k', OPENAI_BASE_URL: mock.url },
      { retries: 2, backoff_ms: 1, max_backoff_ms: 1, breaker_failures: 1, breaker_cooldown_ms: 600_000 },
    ));
  });
  afterAll(async () => {
    await router.close();
    await mock.close();
  });

  const deep = () => {
    let value: unknown = 1;
    for (let i = 0; i < 200_000; i++) value = [value];
    return value;
  };
  const circular = () => {
    const value: Record<string, unknown> = {};
    value.self = value;
    return value;
  };

  it.each([
    ['a value too deep to serialise (RangeError)', deep],
    ['a circular value (TypeError)', circular],
  ])(
    'the upstream request cannot be built from %s: no attempt, no retry, the circuit stays closed',
    async (_name, extra) => {
      const model = catalog.resolve('gpt-6-luna');
      const before = mock.requests.length;
      for (const streaming of [false, true]) {
        const unbuildable = call(undefined, { extra: extra() });
        const attempt = streaming
          ? stream(router, router.route(model, 'live'), unbuildable)
          : complete(router, router.route(model, 'live'), unbuildable);
        const routed = await attempt;
        expect(routed.ok).toBe(false);
        expect(!routed.ok && routed.error).toBeInstanceOf(Error);
        expect(!routed.ok && routed.error).not.toBeInstanceOf(UpstreamError);
      }
      expect(mock.requests.length).toBe(before);
      expect(catalog.resolve('gpt-6-luna').active).toBe(true);
      const routed = await complete(router, router.route(model, 'live'), call());
      expect(answerOf(routed).choices[0]!.message.content).toBeTruthy();
    },
  );

  it('leaves the call and the route as they were; a failure is returned and names the deployment that failed', async () => {
    const model = catalog.resolve('gpt-6-luna');
    const route = router.route(model, 'live', { timeoutMs: 5_000 });
    const given = call(undefined, { models: ['gpt-6-luna'], timeout_ms: 5_000 });
    const before = structuredClone({
      body: given.body,
      timeoutMs: given.timeoutMs,
      route: { model: route.model.id, providerId: route.providerId },
    });
    const signal = given.signal;
    mock.enqueue({ kind: 'ok' }, { kind: 'error', status: 400, message: 'bad field' });
    const answered = await complete(router, route, given);
    expect(answered.ok).toBe(true);
    expect(mock.requests.at(-1)!.body).not.toHaveProperty('models');
    expect(mock.requests.at(-1)!.body).not.toHaveProperty('timeout_ms');
    const failed = await complete(router, route, given);
    expect(failed.ok).toBe(false);
    expect([failed.model.id, failed.providerId]).toEqual(['gpt-6-luna', 'openai']);
    expect(!failed.ok && failed.error).toBeInstanceOf(UpstreamError);
    expect({
      body: given.body,
      timeoutMs: given.timeoutMs,
      route: { model: route.model.id, providerId: route.providerId },
    }).toEqual(before);
    expect(given.signal).toBe(signal);
    expect(given.defaultMaxTokens).toBeUndefined();
  });

  it('a TypeError inside an adapter is not retried and does not open the circuit', () => {
    expect(verdict(new TypeError("Cannot read properties of undefined (reading 'x')"))).toBe('stop');
    expect(verdict(new RangeError('Maximum call stack size exceeded'))).toBe('stop');
  });
});
