import { describe, expect, it } from 'vitest';
import { admit } from '../../src/billing/admission.js';
import { findCrossings } from '../../src/billing/low-balance.js';
import { parseUsd, plainJson, usdNumber, usdString } from '../../src/money/index.js';
import { affordableCompletionTokens, costOf } from '../../src/billing/pricing.js';
import { GatewayError } from '../../src/errors/index.js';

describe('money', () => {
  it('plainJson writes numbers in exponent form as plain decimals, outside strings only', () => {
    const value = { a: 2e-7, b: 'x 2e-7 "q\\" 3e-8', c: [1e-9, -1.5e-7, 0.5, 12], d: 'end\\', e: 4e-8 };
    const text = plainJson(JSON.stringify(value));
    expect(text).toBe(
      '{"a":0.0000002,"b":"x 2e-7 \\"q\\\\\\" 3e-8","c":[0.000000001,-0.00000015,0.5,12],"d":"end\\\\","e":0.00000004}',
    );
    expect(JSON.parse(text)).toEqual(value);
    expect(plainJson(`data: ${JSON.stringify({ usage: { cost: usdNumber(37n) } })}\n\n`)).toBe(
      'data: {"usage":{"cost":0.000000037}}\n\n',
    );
    const usual = JSON.stringify({ cost: 0.00015 });
    expect(plainJson(usual)).toBe(usual);
  });

  it('parses decimal USD exactly, including exponent forms', () => {
    expect(parseUsd('5')).toBe(5_000_000_000n);
    expect(parseUsd(0.00015)).toBe(150_000n);
    expect(parseUsd(1e-7)).toBe(100n);
    expect(parseUsd('-2.5')).toBe(-2_500_000_000n);
    expect(parseUsd(0.3)).toBe(300_000_000n);
  });

  it('refuses amounts finer than 1e-9 USD or not numbers at all', () => {
    expect(() => parseUsd('1.0000000001')).toThrow(RangeError);
    expect(() => parseUsd(0.1 + 0.2)).toThrow(RangeError);
    expect(() => parseUsd('abc')).toThrow(RangeError);
    expect(() => parseUsd(Number.NaN)).toThrow(RangeError);
  });

  it('renders nano-USD with at most 9 decimals and round-trips', () => {
    expect(usdString(4_999_990_100n)).toBe('4.9999901');
    expect(usdNumber(1n)).toBe(0.000000001);
    expect(usdString(-1_500_000_000n)).toBe('-1.5');
    for (const nano of [0n, 1n, 123_456_789n, 5_000_000_000n, 987_654_321_012n])
      expect(parseUsd(usdNumber(nano))).toBe(nano);
  });

  it('renders the same number as the exact decimal string, on both sides of 2^53 nano-USD', () => {
    let seed = 42;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    const samples = [0n, 1n, -1n, 2n ** 53n - 1n, -(2n ** 53n - 1n), 2n ** 53n, 2n ** 60n + 7n, -(2n ** 61n) - 3n];
    for (let i = 0; i < 20_000; i++) {
      const digits = 1 + Math.floor(random() * 16);
      const magnitude = BigInt(Math.floor(random() * 10 ** digits));
      samples.push(random() < 0.2 ? -magnitude : magnitude);
    }
    for (const nano of samples) expect(usdNumber(nano), String(nano)).toBe(Number(usdString(nano)));
  });
});

describe('pricing', () => {
  const price = { promptPer1k: 150_000n, completionPer1k: 600_000n };

  it('rounds a cost up to the next nano-USD', () => {
    expect(costOf(price, 1, 0)).toBe(150n);
    expect(costOf(price, 1, 1)).toBe(750n);
    expect(costOf({ promptPer1k: 1n, completionPer1k: 0n }, 1, 0)).toBe(1n);
  });

  it('finds the most completion tokens a budget pays, consistent with costOf', () => {
    for (const budget of [0n, 149n, 150n, 751n, 10_000n, 1_000_000n]) {
      const tokens = affordableCompletionTokens(price, 1, budget);
      if (tokens > 0) expect(costOf(price, 1, tokens)).toBeLessThanOrEqual(budget);
      expect(costOf(price, 1, tokens + 1)).toBeGreaterThan(budget);
    }
  });
});

describe('admission', () => {
  const base = {
    price: { promptPer1k: 1_000_000n, completionPer1k: 2_000_000n },
    feesNano: 0n,
    promptTokens: 100,
    promptCeiling: 100,
    requestedMaxTokens: undefined,
    choices: 1,
    modelMaxTokens: 1000,
    contextLength: 4000,
    balanceAvailable: 10_000_000n,
    dailyRemaining: null,
    keyRemaining: null,
    free: false,
  };

  it('holds the worst case: prompt plus the model maximum when max_tokens is absent', () => {
    const a = admit(base);
    expect(a).toEqual({ maxTokens: 1000, lowered: false, holdNano: 100_000n + 2_000_000n });
  });

  it('lowers max_tokens to what the balance pays, and refuses below prompt + 1 token', () => {
    const a = admit({ ...base, balanceAvailable: 300_000n });
    expect(a.lowered).toBe(true);
    expect(a.maxTokens).toBe(100);
    expect(a.holdNano).toBeLessThanOrEqual(300_000n);
    expect(() => admit({ ...base, balanceAvailable: 101_999n })).toThrow(
      expect.objectContaining({ code: 'insufficient_credits' }),
    );
    expect(admit({ ...base, balanceAvailable: 102_000n }).maxTokens).toBe(1);
  });

  it('multiplies the completion bound by n', () => {
    const a = admit({ ...base, choices: 3, requestedMaxTokens: 10 });
    expect(a.holdNano).toBe(100_000n + 3n * 10n * 2_000n);
  });

  it('uses the tightest budget and names it in the error', () => {
    expect(() => admit({ ...base, dailyRemaining: 0n })).toThrow(
      expect.objectContaining({ code: 'daily_limit_exceeded' }),
    );
    expect(() => admit({ ...base, keyRemaining: 10n })).toThrow(
      expect.objectContaining({ code: 'key_limit_exceeded' }),
    );
    expect(admit({ ...base, dailyRemaining: 200_000n }).maxTokens).toBe(50);
  });

  it('checks the context window and the model maximum first; free requests hold nothing', () => {
    expect(() => admit({ ...base, requestedMaxTokens: 1001 })).toThrow(
      expect.objectContaining({ param: 'max_tokens' }),
    );
    expect(() => admit({ ...base, promptTokens: 3500, requestedMaxTokens: 600 })).toThrow(
      expect.objectContaining({ code: 'context_length_exceeded' }),
    );
    expect(admit({ ...base, promptTokens: 3500 }).maxTokens).toBe(500);
    expect(admit({ ...base, free: true, balanceAvailable: 0n })).toEqual({
      maxTokens: 1000,
      lowered: false,
      holdNano: 0n,
    });
    expect(() => admit({ ...base, balanceAvailable: 0n })).toThrow(GatewayError);
  });
});

describe('low-balance crossings', () => {
  it('fires only when a debit goes from at-or-above a threshold to below it', () => {
    expect(findCrossings(1_000n, 999n, [1_000n])).toEqual([1_000n]);
    expect(findCrossings(999n, 500n, [1_000n])).toEqual([]);
    expect(findCrossings(5_000n, 100n, [1_000n, 2_000n, 50n])).toEqual([1_000n, 2_000n]);
  });
});
