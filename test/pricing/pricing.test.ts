/**
 * Prices as configured to the cost of a usage, kind by kind: each kind at its own rate, long-context tiers on the
 * whole request, service tiers, fees, dated changes and daily windows; and the hold at the dearest rate that can
 * apply. Expected figures are worked out by hand from the prices below.
 */
import { describe, expect, it } from 'vitest';
import {
  PriceRules,
  billingRecord,
  anthropicUsage,
  capUsage,
  chatUsage,
  countedUsage,
  holdRates,
  priceUsage,
  responsesUsage,
  type TokenUsage,
} from '../../src/pricing/index.js';

const usage = (kinds: Partial<TokenUsage>): TokenUsage => ({ ...countedUsage(0, 0), ...kinds });

// USD per 1K tokens: $1 / $4 per million in and out, reads at a tenth, writes 1.25x and 2x.
const rules = new PriceRules({
  prompt: 0.001,
  completion: 0.004,
  input_cache_read: 0.0001,
  input_cache_write: 0.00125,
  input_cache_write_1h: 0.002,
  request: 0.000002,
  web_search: 0.01,
  tiers: [{ above_prompt_tokens: 200_000, prompt: 0.002, completion: 0.006 }],
  service_tiers: { priority: { prompt: 0.0018, completion: 0.0072 } },
  changes: [{ effective_from: '2027-01-01T00:00:00Z', prompt: 0.0015, completion: 0.006 }],
  daily: [{ from_utc: '16:30', to_utc: '00:30', prompt: 0.0005, completion: 0.002 }],
});
const NOON_2026 = Date.parse('2026-11-27T12:00:00Z');
const sheet = rules.at(NOON_2026);

describe('the cost of a usage', () => {
  it('prices each kind at its own rate and rounds up once', () => {
    const used = usage({
      input: 1_000,
      cacheRead: 9_000,
      cacheWrite: 2_000,
      cacheWrite1h: 1_000,
      output: 500,
      reasoning: 250,
    });
    // Nano-USD per 1K: 1000*1e6 + 9000*1e5 + 2000*1.25e6 + 1000*2e6 + 750*4e6 = 9.4e9, /1000; + 2,000 request fee.
    expect(priceUsage(sheet, used).costNano).toBe(9_400_000n + 2_000n);
    expect(priceUsage(sheet, usage({ input: 1, cacheRead: 1 })).costNano).toBe(1_100n + 2_000n);
    expect(priceUsage(sheet, usage({ cacheRead: 1 })).costNano).toBe(100n + 2_000n);
    expect(priceUsage(new PriceRules({ prompt: 0.000000001, completion: 0 }).at(0), usage({ input: 1 })).costNano).toBe(
      1n,
    );
  });

  it('cache reads cost a tenth of plain input: an agent resending its prefix pays the provider price', () => {
    const plain = priceUsage(sheet, usage({ input: 100_000 })).costNano;
    const cached = priceUsage(sheet, usage({ input: 1_000, cacheRead: 99_000 })).costNano;
    expect(plain - 2_000n).toBe(100_000_000n);
    expect(cached - 2_000n).toBe(1_000_000n + 9_900_000n);
  });

  it('a prompt above a tier pays the tier on every token, and says which tier it was', () => {
    const priced = priceUsage(sheet, usage({ input: 200_001, output: 1_000 }));
    expect(priced.tier).toBe(200_000);
    expect(priced.costNano).toBe((200_001n * 2_000_000n + 1_000n * 6_000_000n + 999n) / 1_000n + 2_000n);
    // The tier did not name cache prices: they stay the base's.
    expect(priceUsage(sheet, usage({ cacheRead: 200_001 })).costNano).toBe(
      (200_001n * 100_000n + 999n) / 1_000n + 2_000n,
    );
    expect(priceUsage(sheet, usage({ input: 200_000 })).tier).toBeUndefined();
  });

  it('a service tier the model sells at is priced at its rates; an unknown one at the standard rates', () => {
    expect(priceUsage(sheet, usage({ input: 1_000, serviceTier: 'priority' }))).toMatchObject({
      costNano: 1_800_000n + 2_000n,
      serviceTier: 'priority',
    });
    expect(priceUsage(sheet, usage({ input: 1_000, serviceTier: 'default' }))).toMatchObject({
      costNano: 1_000_000n + 2_000n,
      serviceTier: undefined,
    });
  });

  it('web searches pay their fee per call', () => {
    expect(priceUsage(sheet, usage({ webSearch: 3 })).costNano).toBe(30_000_000n + 2_000n);
  });
});

describe('prices in force', () => {
  it('a dated change applies from its moment on, without a redeploy', () => {
    expect(rules.at(Date.parse('2026-12-31T12:00:00Z')).prompt).toBe(1_000_000n);
    expect(rules.at(Date.parse('2027-01-01T12:00:00Z')).prompt).toBe(1_500_000n);
    // At midnight the daily window's prices apply on either side of the change.
    expect(rules.at(Date.parse('2027-01-01T00:00:00Z')).prompt).toBe(500_000n);
    // Kinds the change does not name keep their configured price.
    expect(rules.at(Date.parse('2027-06-01T12:00:00Z')).cacheRead).toBe(100_000n);
  });

  it('a daily window (wrapping midnight) has its own prices', () => {
    expect(rules.at(Date.parse('2026-11-27T16:29:59Z')).prompt).toBe(1_000_000n);
    expect(rules.at(Date.parse('2026-11-27T16:30:00Z')).prompt).toBe(500_000n);
    expect(rules.at(Date.parse('2026-11-28T00:29:00Z')).completion).toBe(2_000_000n);
    expect(rules.at(Date.parse('2026-11-28T00:30:00Z')).completion).toBe(4_000_000n);
  });

  it('unpriced kinds cost what prompt and completion cost', () => {
    const plain = new PriceRules({ prompt: 0.003, completion: 0.015 }).at(0);
    expect(plain).toMatchObject({
      cacheRead: 3_000_000n,
      cacheWrite: 3_000_000n,
      cacheWrite1h: 3_000_000n,
      reasoning: 15_000_000n,
    });
    expect(plain).toMatchObject({ request: 0n, image: 0n, webSearch: 0n });
  });
});

describe('the hold', () => {
  const shape = { promptTokens: 1_000, images: 0, webSearches: 0 };

  it('takes the dearest rate a prompt token may be billed at (a one-hour cache write here)', () => {
    expect(holdRates([sheet], shape)).toEqual({
      promptPer1k: 2_000_000n,
      completionPer1k: 4_000_000n,
      feesNano: 2_000n,
    });
  });

  it('takes a tier the prompt may reach, the tier of service asked for, and every model that may answer', () => {
    expect(holdRates([sheet], { ...shape, promptTokens: 250_000 }).completionPer1k).toBe(6_000_000n);
    expect(holdRates([sheet], { ...shape, serviceTier: 'priority' }).completionPer1k).toBe(7_200_000n);
    const dear = new PriceRules({ prompt: 0.01, completion: 0.001 }).at(0);
    expect(holdRates([sheet, dear], shape)).toMatchObject({ promptPer1k: 10_000_000n, completionPer1k: 4_000_000n });
  });

  it('adds per-call fees times the most calls', () => {
    expect(holdRates([sheet], { ...shape, webSearches: 5 }).feesNano).toBe(50_000_000n + 2_000n);
  });
});

describe('usage read from each provider', () => {
  const own = { prompt: 77, completion: () => 33 };

  it("OpenAI's chat usage: cached tokens inside the prompt, reasoning inside the completion, the tier served", () => {
    const read = chatUsage(
      {
        prompt_tokens: 1_000,
        completion_tokens: 300,
        prompt_tokens_details: { cached_tokens: 800 },
        completion_tokens_details: { reasoning_tokens: 200 },
      },
      own,
      'priority',
    );
    expect(read).toMatchObject({ input: 200, cacheRead: 800, output: 100, reasoning: 200, serviceTier: 'priority' });
  });

  it("the Anthropic adapter's chat usage keeps Anthropic's cache writes apart, split by lifetime", () => {
    const read = chatUsage(
      {
        prompt_tokens: 1_000,
        completion_tokens: 10,
        prompt_tokens_details: { cached_tokens: 600 },
        cache_creation_input_tokens: 300,
        cache_creation: { ephemeral_5m_input_tokens: 100, ephemeral_1h_input_tokens: 200 },
        server_tool_use: { web_search_requests: 2 },
      },
      own,
    );
    expect(read).toMatchObject({ input: 100, cacheRead: 600, cacheWrite: 100, cacheWrite1h: 200, webSearch: 2 });
  });

  it('a total the provider did not report (or not as a count) is tollgate’s own', () => {
    expect(chatUsage({ prompt_tokens: 12, completion_tokens: 12.5 }, own)).toMatchObject({ input: 12, output: 33 });
    expect(chatUsage(undefined, own)).toMatchObject({ input: 77, output: 33 });
  });

  it("Anthropic's Messages usage lists cache reads and writes apart from input_tokens", () => {
    const read = anthropicUsage(
      {
        input_tokens: 5,
        cache_read_input_tokens: 1_000,
        cache_creation_input_tokens: 400,
        cache_creation: { ephemeral_1h_input_tokens: 400 },
        output_tokens: 20,
      },
      own,
    );
    expect(read).toMatchObject({ input: 5, cacheRead: 1_000, cacheWrite: 0, cacheWrite1h: 400, output: 20 });
    expect(anthropicUsage({ output_tokens: 20 }, own)).toMatchObject({ input: 77, cacheRead: 0, output: 20 });
  });

  it('a Response: cached input inside input, reasoning inside output, one search per web_search_call item', () => {
    const read = responsesUsage(
      {
        service_tier: 'flex',
        output: [{ type: 'web_search_call' }, { type: 'message' }, { type: 'web_search_call' }],
        usage: {
          input_tokens: 270_000,
          input_tokens_details: { cached_tokens: 269_000 },
          output_tokens: 50,
          output_tokens_details: { reasoning_tokens: 40 },
        },
      },
      own,
    );
    expect(read).toMatchObject({
      input: 1_000,
      cacheRead: 269_000,
      output: 10,
      reasoning: 40,
      webSearch: 2,
      serviceTier: 'flex',
    });
  });
});

describe('a report above what the request allowed', () => {
  it('is billed at the context length and completion bound: plain input cut first, then output', () => {
    const capped = capUsage(usage({ input: 500, cacheRead: 700, output: 90, reasoning: 30 }), 1_000, 100);
    expect(capped).toMatchObject({ input: 300, cacheRead: 700, output: 70, reasoning: 30 });
  });
});

describe("the ledger's record of a debit", () => {
  it('keeps the tokens per kind, the rates applied, the tier and the cost', () => {
    const used = usage({ input: 200_001, cacheRead: 5, output: 7, serviceTier: 'priority' });
    const record: unknown = JSON.parse(billingRecord(used, priceUsage(sheet, used)));
    expect(record).toMatchObject({
      tokens: { input: 200_001, input_cache_read: 5, output: 7, internal_reasoning: 0 },
      prices_nano_per_1k: { prompt: '2000000', completion: '6000000', input_cache_read: '100000' },
      fees_nano: {
        request: String(sheet.serviceTiers.priority!.request),
        image: expect.any(String),
        web_search: expect.any(String),
      },
      tier_above_prompt_tokens: 200_000,
      service_tier: 'priority',
    });
  });
});
