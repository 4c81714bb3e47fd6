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

  it('counts the prompt and the completion bound x choices at admission, the bound lowered to the room left', () => {
    vi.useFakeTimers({ now: 1_000_000_000_000 });
    const limiter = new MemoryRateLimiter();
    const first = limiter.admit('a', limits, 30, { bound: 20, choices: 2 });
    expect(first).toMatchObject({ allowed: true, completionBound: 20, tokens: { remaining: 30 } });
    // 20 tokens left after the prompt, for 2 choices: 10 each.
    const lowered = limiter.admit('a', limits, 10, { bound: 50, choices: 2 });
    expect(lowered).toMatchObject({ allowed: true, completionBound: 10, tokens: { remaining: 0 } });
    expect(limiter.admit('b', limits, 5, { bound: 100, choices: 10 })).toMatchObject({ completionBound: 9 });
    // Not even one token per choice beyond the prompt: refused, nothing counted.
    const refused = limiter.admit('b', limits, 5, { bound: 100, choices: 6 });
    expect(refused).toMatchObject({ allowed: false, completionBound: 0, tokens: { remaining: 5 } });
    expect(refused.requests.remaining).toBe(2);
    // An embedding (no completion) needs only its prompt.
    expect(limiter.admit('b', limits, 5, { bound: 0, choices: 1 })).toMatchObject({ allowed: true });
  });

  it('takes back what an answer did not use, from the bucket it was counted in, never below zero', () => {
    vi.useFakeTimers({ now: 1_000_000_000_000 });
    const limiter = new MemoryRateLimiter();
    const first = limiter.admit('a', limits, 10, { bound: 40, choices: 2 });
    expect(first.tokens.remaining).toBe(10);
    vi.setSystemTime(1_000_000_001_000);
    // The answer used 5 of its 80: 75 go back to the second it was admitted in.
    limiter.giveBack('a', first.second!, 75);
    expect(limiter.admit('a', limits, 0, { bound: 100, choices: 1 })).toMatchObject({ completionBound: 85 });
    const d = limiter.admit('d', limits, 10, { bound: 20, choices: 1 });
    limiter.giveBack('d', d.second!, 1_000);
    expect(limiter.admit('d', limits, 0).tokens.remaining).toBe(100);
    // A bucket that left the window is not taken from: the later one keeps its count.
    vi.setSystemTime(1_000_000_062_500);
    const late = limiter.admit('c', limits, 50);
    limiter.giveBack('c', late.second! - 62, 50);
    expect(limiter.admit('c', limits, 0).tokens.remaining).toBe(50);
  });
});
