import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisRateLimiter, type RedisRateLimiterOptions } from '../../src/limits/index.js';

const REDIS_URL = process.env.TOLLGATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const limits = { requestsPerMinute: 3, tokensPerMinute: 100 };

const open: RedisRateLimiter[] = [];
const prefixes: string[] = [];

/** A fresh key prefix per test; its keys are deleted afterwards. */
function newPrefix(): string {
  const prefix = `tgtest:${randomUUID()}:`;
  prefixes.push(prefix);
  return prefix;
}

function limiter(prefix: string, options: Partial<RedisRateLimiterOptions> = {}): RedisRateLimiter {
  const created = new RedisRateLimiter({ url: REDIS_URL, prefix, ...options });
  open.push(created);
  return created;
}

async function withClient<T>(use: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis(REDIS_URL);
  try {
    return await use(client);
  } finally {
    await client.quit();
  }
}

async function keysUnder(client: Redis, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    keys.push(...batch);
    cursor = next;
  } while (cursor !== '0');
  return keys;
}

afterEach(async () => {
  await Promise.all(open.splice(0).map((l) => l.close()));
  await withClient(async (client) => {
    for (const prefix of prefixes.splice(0)) {
      const keys = await keysUnder(client, prefix);
      if (keys.length > 0) await client.del(...keys);
    }
  });
});

describe('Redis rate limiter', () => {
  it('admits exactly the limit within a minute and refuses with a retry time', async () => {
    const l = limiter(newPrefix());
    const decisions = [];
    for (let i = 0; i < 5; i++) decisions.push(await l.admit('a', limits, 1));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false, false]);
    expect(decisions.map((d) => d.requests.remaining)).toEqual([2, 1, 0, 0, 0]);
    expect(decisions[3]!.retryAfterSeconds).toBeGreaterThanOrEqual(60);
    expect(decisions[3]!.retryAfterSeconds).toBeLessThanOrEqual(61);
    expect(decisions[3]!.requests.resetMs).toBeGreaterThan(59_000);
    expect(decisions[3]!.requests.resetMs).toBeLessThanOrEqual(61_000);
    expect(decisions[3]!.tokens.remaining).toBe(97);
  });

  it('three replicas admitting 200 requests concurrently admit exactly the limit', async () => {
    const prefix = newPrefix();
    const replicas = [limiter(prefix), limiter(prefix), limiter(prefix)];
    const rpm = { requestsPerMinute: 60, tokensPerMinute: 1_000_000 };
    const decisions = await Promise.all(Array.from({ length: 200 }, (_, i) => replicas[i % 3]!.admit('acct', rpm, 10)));
    const admitted = decisions.filter((d) => d.allowed);
    expect(admitted).toHaveLength(60);
    // Atomic counting: each admitted request saw a distinct remaining count, 59 down to 0.
    expect(admitted.map((d) => d.requests.remaining).sort((a, b) => a - b)).toEqual(Array.from({ length: 60 }, (_, i) => i));
    expect(decisions.filter((d) => !d.allowed).every((d) => d.retryAfterSeconds >= 60)).toBe(true);
    const last = await replicas[0]!.admit('acct', rpm, 0);
    expect(last.allowed).toBe(false);
    expect(last.tokens.remaining).toBe(1_000_000 - 600);
  });

  it('reports remaining counts shared across instances', async () => {
    const prefix = newPrefix();
    const [a, b, c] = [limiter(prefix), limiter(prefix), limiter(prefix)];
    expect((await a.admit('x', limits, 10)).requests.remaining).toBe(2);
    const second = await b.admit('x', limits, 20);
    expect(second.requests.remaining).toBe(1);
    expect(second.tokens.remaining).toBe(70);
    await a.addTokens('x', 5);
    const third = await c.admit('x', limits, 0);
    expect(third.requests.remaining).toBe(0);
    expect(third.tokens.remaining).toBe(65);
    expect((await a.admit('x', limits, 0)).allowed).toBe(false);
    expect((await c.admit('other', limits, 0)).requests.remaining).toBe(2);
  });

  it('counts tokens: prompt tokens at admission, completion tokens afterwards', async () => {
    const l = limiter(newPrefix());
    expect((await l.admit('a', limits, 60)).allowed).toBe(true);
    await l.addTokens('a', 30);
    const refused = await l.admit('a', limits, 20);
    expect(refused.allowed).toBe(false);
    expect(refused.tokens.remaining).toBe(10);
    expect(refused.requests.remaining).toBe(2);
    expect((await l.admit('a', limits, 10)).allowed).toBe(true);
    expect((await l.admit('b', limits, 100)).allowed).toBe(true);
    expect((await l.admit('b', limits, 1)).allowed).toBe(false);
  });

  it('refuses over the limit with a retry time within the window', async () => {
    const l = limiter(newPrefix());
    const two = { requestsPerMinute: 2, tokensPerMinute: 100 };
    expect((await l.admit('a', two, 0)).allowed).toBe(true);
    expect((await l.admit('a', two, 0)).allowed).toBe(true);
    const refused = await l.admit('a', two, 0);
    expect(refused.allowed).toBe(false);
    expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(refused.retryAfterSeconds).toBeLessThanOrEqual(61);
  });

  it('slides: buckets older than 61 seconds are dropped, younger ones still count', async () => {
    const prefix = newPrefix();
    const l = limiter(prefix);
    const key = `${prefix}rl:{a}:req`;
    await withClient(async (client) => {
      const [seconds] = await client.time();
      const now = Number(seconds);
      await client.hset(key, String(now - 70), 5, String(now - 59), 1);
    });
    const one = { requestsPerMinute: 1, tokensPerMinute: 100 };
    const refused = await l.admit('a', one, 0);
    expect(refused.allowed).toBe(false);
    // The bucket from 59 seconds ago leaves the window in one or two seconds.
    expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(refused.retryAfterSeconds).toBeLessThanOrEqual(2);
    expect(refused.requests.resetMs).toBeLessThanOrEqual(2_000);
    await withClient(async (client) => {
      expect(await client.hlen(key)).toBe(1);
      expect((await l.admit('a', { requestsPerMinute: 2, tokensPerMinute: 100 }, 0)).allowed).toBe(true);
      expect(await client.ttl(key)).toBeGreaterThan(60);
      expect(await client.ttl(key)).toBeLessThanOrEqual(62);
    });
  });

  it('fails open, fast, and reports the error when Redis is unreachable', async () => {
    const errors: unknown[] = [];
    const l = limiter(newPrefix(), { url: 'redis://127.0.0.1:1', onError: (error) => errors.push(error) });
    const started = Date.now();
    const decision = await l.admit('a', limits, 10);
    await l.addTokens('a', 10);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(decision.allowed).toBe(true);
    expect(decision.requests.remaining).toBe(3);
    expect(decision.tokens.remaining).toBe(100);
    expect(errors).toHaveLength(2);
  });
});
