/**
 * The tokens-per-minute window counts a request's completion at admission: its prompt plus the completion bound
 * sent upstream x the choices. A request that does not fit whole is sent with a lower bound (`x-tollgate-max-
 * tokens-lowered`), refused with 429 only when not even its prompt and one token per choice fit, and what its
 * answer did not use goes back to the window. Against the running gateway, with the window in memory and in Redis.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEach } from '../support/backends.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { REDIS_TEST_URL } from '../support/redis.js';

const TOKENS_PER_MINUTE = 100_000;
const PROMPTS = 73;
const N = 3;
/** Claude-sized bound: 73 prompts x 3 choices x 1,000 = 219,000 completion tokens in one request. */
const MAX_TOKENS = 1_000;
const CHOICES = PROMPTS * N;

const CONFIGURATIONS: Array<{ name: string; dialect: 'sqlite' | 'postgres'; env: Record<string, string> }> = [
  { name: 'SQLite, window in memory', dialect: 'sqlite', env: {} },
  {
    name: 'PostgreSQL, window in Redis',
    dialect: 'postgres',
    env: { REDIS_URL: REDIS_TEST_URL, TOLLGATE_REDIS_PREFIX: `tgtest:window:${process.pid}:${Date.now()}:` },
  },
];

describeEach(CONFIGURATIONS)('token window on $name', ({ dialect, env }) => {
  let gateway: TestGateway;

  beforeAll(async () => {
    gateway = await startGateway({
      dialect,
      env,
      overrides: { plans: { windowed: { requests_per_minute: 1_000, tokens_per_minute: TOKENS_PER_MINUTE } } },
    });
  });
  afterAll(async () => gateway?.close());

  /** A test key (free: only the window bounds it) of a fresh account on the windowed plan. */
  async function testKey(): Promise<string> {
    const account = await gateway.account({ plan: 'windowed' });
    return (await gateway.key(account.id, { environment: 'test' })).key;
  }

  async function complete(key: string, prompts: string[], body: Record<string, unknown> = {}) {
    const response = await fetch(`${gateway.baseURL}/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sandbox/echo', prompt: prompts, n: N, max_tokens: MAX_TOKENS, ...body }),
    });
    return { status: response.status, headers: response.headers, body: (await response.json()) as any };
  }

  /** The window's remaining tokens, as a request that counts none sees them. */
  async function remainingTokens(key: string): Promise<number> {
    const response = await fetch(`${gateway.baseURL}/models`, { headers: { authorization: `Bearer ${key}` } });
    expect(response.status).toBe(200);
    return Number(response.headers.get('x-ratelimit-remaining-tokens'));
  }

  /** Redis gets give-backs a few milliseconds after the answer: waits (a second at most) for `expected`. */
  async function remainingSettlesAt(key: string, expected: number): Promise<number> {
    const deadline = Date.now() + 1_000;
    let remaining = await remainingTokens(key);
    while (remaining !== expected && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      remaining = await remainingTokens(key);
    }
    return remaining;
  }

  it('lowers the bound of 219,000 completion tokens to what the window has room for; the answer fills it; then 429', async () => {
    const key = await testKey();
    // Each prompt is longer than the bound the window leaves: every choice generates its whole bound.
    const prompts = Array.from({ length: PROMPTS }, (_, i) => `${i} ${'word '.repeat(400)}`);
    const big = await complete(key, prompts);
    expect(big.status).toBe(200);
    const lowered = Number(big.headers.get('x-tollgate-max-tokens-lowered'));
    expect(lowered).toBeGreaterThan(0);
    expect(lowered).toBeLessThan(MAX_TOKENS);
    const remaining = Number(big.headers.get('x-ratelimit-remaining-tokens'));
    const counted = TOKENS_PER_MINUTE - remaining;
    const prompt = counted - lowered * CHOICES;
    // The window was filled to its limit, no further: not even one more token per choice was left.
    expect(prompt).toBeGreaterThan(PROMPTS * 400);
    expect(remaining).toBeGreaterThanOrEqual(0);
    expect(remaining).toBeLessThan(CHOICES);
    expect(big.body.choices).toHaveLength(CHOICES);
    expect(big.body.usage.completion_tokens).toBe(lowered * CHOICES);
    for (const choice of big.body.choices) expect(choice.finish_reason).toBe('length');

    // The answer used its whole bound: nothing comes back, and the next request within the minute sees it.
    expect(await remainingTokens(key)).toBe(remaining);
    const refused = await complete(key, prompts);
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('rate_limit_exceeded');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers.get('x-ratelimit-remaining-tokens'))).toBe(remaining);
  });

  it('gives back what a small answer did not use, so the next request finds the room', async () => {
    const key = await testKey();
    const prompts = Array.from({ length: PROMPTS }, (_, i) => `hello ${i}`);
    const first = await complete(key, prompts);
    expect(first.status).toBe(200);
    const lowered = Number(first.headers.get('x-tollgate-max-tokens-lowered'));
    expect(lowered).toBeLessThan(MAX_TOKENS);
    const remaining = Number(first.headers.get('x-ratelimit-remaining-tokens'));
    expect(remaining).toBeLessThan(CHOICES);
    const prompt = TOKENS_PER_MINUTE - remaining - lowered * CHOICES;
    const used = first.body.usage.completion_tokens as number;
    expect(used).toBeLessThan(lowered * CHOICES);

    // What stays counted is the prompt and the completion billed.
    expect(await remainingSettlesAt(key, TOKENS_PER_MINUTE - prompt - used)).toBe(TOKENS_PER_MINUTE - prompt - used);
    // So the same request fits again, lowered to the room left now.
    const second = await complete(key, prompts);
    expect(second.status).toBe(200);
    const room = TOKENS_PER_MINUTE - 2 * prompt - used;
    expect(Number(second.headers.get('x-tollgate-max-tokens-lowered'))).toBe(Math.floor(room / CHOICES));
  });

  it('counts a request that fits whole at its bound x choices, without lowering it', async () => {
    const key = await testKey();
    const fits = await complete(key, ['hello', 'world'], { max_tokens: 100 });
    expect(fits.status).toBe(200);
    expect(fits.headers.get('x-tollgate-max-tokens-lowered')).toBeNull();
    const counted = TOKENS_PER_MINUTE - Number(fits.headers.get('x-ratelimit-remaining-tokens'));
    const prompt = counted - 100 * 2 * N;
    expect(prompt).toBeGreaterThan(0);
    expect(prompt).toBeLessThan(10);
  });

  it('counts only the bound credit allows, and gives the whole completion back when credit refuses', async () => {
    const prompts = Array.from({ length: PROMPTS }, (_, i) => `hello ${i}`);
    // The prompt as the window counts it, from a test key's request (only the window lowers its bound).
    const probe = await complete(await testKey(), prompts);
    const prompt =
      TOKENS_PER_MINUTE -
      Number(probe.headers.get('x-ratelimit-remaining-tokens')) -
      Number(probe.headers.get('x-tollgate-max-tokens-lowered')) * CHOICES;

    const poor = await gateway.account({ plan: 'windowed' });
    await gateway.setBalance(poor.id, 0.01);
    const lowered = await complete(poor.key, prompts);
    expect(lowered.status).toBe(200);
    const bound = Number(lowered.headers.get('x-tollgate-max-tokens-lowered'));
    // Credit pays less than the window's room: the window keeps only what credit holds.
    expect(bound).toBeLessThan(Number(probe.headers.get('x-tollgate-max-tokens-lowered')));
    expect(Number(lowered.headers.get('x-ratelimit-remaining-tokens'))).toBe(
      TOKENS_PER_MINUTE - prompt - bound * CHOICES,
    );

    const broke = await gateway.account({ plan: 'windowed' });
    await gateway.setBalance(broke.id, 0);
    const refused = await complete(broke.key, prompts);
    expect(refused.status).toBe(402);
    expect(refused.body.error.code).toBe('insufficient_credits');
    expect(await remainingSettlesAt(broke.key, TOKENS_PER_MINUTE - prompt)).toBe(TOKENS_PER_MINUTE - prompt);
  });
});
