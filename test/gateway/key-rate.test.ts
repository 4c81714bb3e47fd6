/**
 * A key's own rate limits beside its account's, through the limiter path admission uses (memory, and Redis across
 * replicas): a request must fit both; refused by one window it is not left counted in the other; completion tokens
 * given back go back to both; the headers show the window with less room.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { AccountState, PlanLimits } from '../../src/billing/index.js';
import { admitBoth, giveBackBoth, keySubject, peekBoth } from '../../src/gateway/key-rate.js';
import { MemoryRateLimiter, RedisRateLimiter, type RateLimiter } from '../../src/limits/index.js';
import { needsRedis } from '../support/backends.js';
import { deleteRedisKeys, REDIS_TEST_URL } from '../support/redis.js';
import { fakeKey } from './fakes.js';

const account = { id: 'acct_1' } as unknown as AccountState;
const accountLimits: PlanLimits = { requestsPerMinute: 3, tokensPerMinute: 1_000, dailyLimitNano: null };
const keyOf = (requestsPerMinute: number | null, tokensPerMinute: number | null) =>
  fakeKey({ id: `key_${randomUUID()}`, requestsPerMinute, tokensPerMinute });

const opened: RedisRateLimiter[] = [];
const prefixes: string[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((l) => l.close()));
  for (const prefix of prefixes.splice(0)) await deleteRedisKeys(prefix);
});

/** Everything a window lets through before it is full, by its own decision's remaining count. */
async function remaining(
  limiter: RateLimiter,
  subject: string,
  limits: { requestsPerMinute: number; tokensPerMinute: number },
) {
  const decision = await limiter.peek(subject, limits);
  return { requests: decision.requests.remaining, tokens: decision.tokens.remaining };
}

function scenarios(name: string, makeLimiter: () => RateLimiter, settle: () => Promise<void>) {
  describe(name, () => {
    const depsOf = (limiter: RateLimiter) => ({ limiter, limitsFor: () => accountLimits });

    it("refuses at the key's requests per minute while the account has room, saying it is the key's limit", async () => {
      const limiter = makeLimiter();
      const deps = depsOf(limiter);
      const key = keyOf(2, null);
      for (let i = 0; i < 2; i++) expect((await admitBoth(deps, account, key, 1)).refusal).toBeUndefined();
      const refused = await admitBoth(deps, account, key, 1);
      expect(refused.refusal?.message).toMatch(/this API key's own limit of 2 requests per minute/);
      expect(refused.refusal?.retryAfterSeconds).toBeGreaterThanOrEqual(1);
      expect(refused.shown.requests).toMatchObject({ limit: 2, remaining: 0 });
      expect((await peekBoth(deps, account, key)).refusal?.message).toMatch(/2 requests per minute/);
      // The account counted only the two requests admitted: another key of it still gets the third.
      expect((await admitBoth(deps, account, keyOf(null, null), 1)).refusal).toBeUndefined();
    });

    it("a request the account's window refuses is given back to the key's window", async () => {
      const limiter = makeLimiter();
      const deps = depsOf(limiter);
      const key = keyOf(10, 500);
      for (let i = 0; i < 3; i++)
        expect((await admitBoth(deps, account, keyOf(null, null), 1)).refusal).toBeUndefined();
      const refused = await admitBoth(deps, account, key, 40);
      expect(refused.refusal).toBeDefined();
      expect(refused.refusal?.message).toBeUndefined();
      await settle();
      expect(await remaining(limiter, keySubject(key.id), { requestsPerMinute: 10, tokensPerMinute: 500 })).toEqual({
        requests: 10,
        tokens: 500,
      });
    });

    it("lowers the completion bound to the key's token room, gives back what the answer did not use to both, and shows the tighter window", async () => {
      const limiter = makeLimiter();
      const deps = depsOf(limiter);
      const key = keyOf(null, 100);
      const admitted = await admitBoth(deps, account, key, 10, { bound: 500, choices: 1 });
      expect(admitted.completionBound).toBe(90);
      // Tokens: the key's window (0 left of 100) is tighter than the account's (900 of 1,000); requests: the account's.
      expect(admitted.shown.tokens).toMatchObject({ limit: 100, remaining: 0 });
      expect(admitted.shown.requests).toMatchObject({ limit: 3, remaining: 2 });
      const refused = await admitBoth(deps, account, key, 10, { bound: 5, choices: 1 });
      expect(refused.refusal?.message).toMatch(/100 tokens per minute/);
      giveBackBoth(deps, admitted, 80);
      await settle();
      expect(
        (await remaining(limiter, keySubject(key.id), { requestsPerMinute: 1e15, tokensPerMinute: 100 })).tokens,
      ).toBe(80);
      expect((await remaining(limiter, account.id, accountLimits)).tokens).toBe(1_000 - 20);
    });
  });
}

scenarios(
  'key rate windows in memory',
  () => new MemoryRateLimiter(),
  () => Promise.resolve(),
);

needsRedis('key rate windows in Redis', () => {
  scenarios(
    'Redis',
    () => {
      const prefix = `tgtest:${randomUUID()}:`;
      prefixes.push(prefix);
      const limiter = new RedisRateLimiter({ url: REDIS_TEST_URL, prefix });
      opened.push(limiter);
      return limiter;
    },
    // Give-backs reach Redis with the account's next call or a timer, within 50 ms.
    () => new Promise((resolve) => setTimeout(resolve, 120)),
  );
});
