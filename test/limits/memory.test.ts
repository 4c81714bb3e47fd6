import { afterEach, describe, expect, it, vi } from 'vitest';
import { MemoryRateLimiter } from '../../src/limits/index.js';

afterEach(() => vi.useRealTimers());

describe('in-memory rate limiter', () => {
  const limits = { requestsPerMinute: 3, tokensPerMinute: 100 };

  it('admits exactly the limit within a minute and refuses with a retry time', () => {
    vi.useFakeTimers({ now: 1_000_000_000_000 });
    const limiter = new MemoryRateLimiter();
    const decisions = Array.from({ length: 5 }, () => limiter.admit('a', limits, 1));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false, false]);
    expect(decisions[3]!.requests.remaining).toBe(0);
    expect(decisions[3]!.retryAfterSeconds).toBeGreaterThanOrEqual(60);
    expect(decisions[3]!.retryAfterSeconds).toBeLessThanOrEqual(61);
  });

  it('peeks without counting, and refuses a peek once the limit is reached', () => {
    vi.useFakeTimers({ now: 1_000_000_000_000 });
    const limiter = new MemoryRateLimiter();
    for (let i = 0; i < 5; i++) expect(limiter.peek('a', limits).allowed).toBe(true);
    expect([1, 2, 3].map(() => limiter.admit('a', limits, 1).allowed)).toEqual([true, true, true]);
    const peeked = limiter.peek('a', limits);
    expect(peeked.allowed).toBe(false);
    expect(peeked.retryAfterSeconds).toBeGreaterThanOrEqual(60);
    expect(peeked.tokens.remaining).toBe(97);
  });

  it('never admits more than the limit in any 60-second span, and frees capacity after it', () => {
    vi.useFakeTimers({ now: 1_000_000_000_500 });
    const limiter = new MemoryRateLimiter();
    const admitted: number[] = [];
    for (let ms = 0; ms < 180_000; ms += 250) {
      vi.setSystemTime(1_000_000_000_500 + ms);
      if (limiter.admit('a', limits, 0).allowed) admitted.push(ms);
    }
    for (const start of admitted)
      expect(admitted.filter((t) => t >= start && t < start + 60_000).length).toBeLessThanOrEqual(3);
    expect(admitted.length).toBeGreaterThanOrEqual(6);
  });

  it('counts tokens: prompt tokens at admission, completion tokens afterwards', () => {
    vi.useFakeTimers({ now: 1_000_000_000_000 });
    const limiter = new MemoryRateLimiter();
    expect(limiter.admit('a', limits, 60).allowed).toBe(true);
    limiter.addTokens('a', 30);
    const refused = limiter.admit('a', limits, 20);
    expect(refused.allowed).toBe(false);
    expect(refused.tokens.remaining).toBe(10);
    expect(limiter.admit('a', limits, 10).allowed).toBe(true);
    expect(limiter.admit('b', limits, 100).allowed).toBe(true);
  });
});
