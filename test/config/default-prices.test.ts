/**
 * The built-in catalog's prices beyond prompt and completion: each provider's rules hold for every model that has
 * them (Anthropic's cache multipliers, OpenAI's long-context tier), dated changes and off-peak hours take effect at
 * their time, and every model's pricing compiles into a price sheet.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_MODELS } from '../../src/config/default-catalog.js';
import type { ModelConfig } from '../../src/config/index.js';
import { parseUsd } from '../../src/money/index.js';
import { PriceRules } from '../../src/pricing/index.js';

const of = (provider: string) => DEFAULT_MODELS.filter((m) => m.provider === provider && m.capabilities.chat);
const byId = (id: string): ModelConfig => DEFAULT_MODELS.find((m) => m.id === id)!;
/** Nano-USD per 1,000 tokens, so multiples compare exactly. */
const nano = (usd: number | undefined) => parseUsd(usd ?? Number.NaN);
const at = (iso: string) => Date.parse(iso);

describe('built-in catalog prices', () => {
  it('compile for every model, at any time', () => {
    for (const model of DEFAULT_MODELS) {
      const rules = new PriceRules(model.pricing);
      for (const when of ['2026-11-27T12:00:00Z', '2026-11-28T02:00:00Z', '2027-06-01T00:00:00Z']) {
        const sheet = rules.at(at(when));
        expect(sheet.prompt, `${model.id} at ${when}`).toBeGreaterThan(0n);
      }
    }
  });

  it('price every Anthropic model: cache writes 1.25x (5 min) and 2x (1 h) input, web search $0.01', () => {
    for (const { id, pricing } of of('anthropic')) {
      const prompt = nano(pricing.prompt);
      expect(nano(pricing.input_cache_write), id).toBe((prompt * 125n) / 100n);
      expect(nano(pricing.input_cache_write_1h), id).toBe(prompt * 2n);
      expect(nano(pricing.input_cache_read), id).toBeLessThan(prompt);
      expect(pricing.web_search, id).toBe(0.01);
      for (const tier of pricing.tiers ?? []) {
        expect(nano(tier.input_cache_write), id).toBe((nano(tier.prompt) * 125n) / 100n);
        expect(nano(tier.input_cache_write_1h), id).toBe(nano(tier.prompt) * 2n);
      }
    }
    // Fable 5.2 reads its cache at 0.025x input, as Fable 5.1 does; the other current models at 0.05x or 0.1x.
    expect(nano(byId('claude-fable-5-2').pricing.input_cache_read) * 40n).toBe(nano(0.008));
    expect(nano(byId('claude-fable-5-1').pricing.input_cache_read) * 40n).toBe(nano(0.01));
  });

  it('bill a Haiku 5.5 prompt above 100K tokens at five times every rate', () => {
    const { pricing } = byId('claude-haiku-5-5');
    const [tier] = pricing.tiers!;
    expect(tier!.above_prompt_tokens).toBe(100_000);
    for (const kind of [
      'prompt',
      'completion',
      'input_cache_read',
      'input_cache_write',
      'input_cache_write_1h',
    ] as const)
      expect(nano(tier![kind]), kind).toBe(nano(pricing[kind]) * 5n);
  });

  it('bill every GPT-6 model above 272K input at 2x input and cache, 1.5x output', () => {
    const gpt = of('openai');
    expect(gpt.map((m) => m.id)).toEqual(expect.arrayContaining(['gpt-6-astra', 'gpt-6.1-sol', 'gpt-6.2-astra']));
    for (const { id, pricing } of gpt) {
      expect(nano(pricing.input_cache_write), id).toBe((nano(pricing.prompt) * 125n) / 100n);
      expect(pricing.tiers, id).toHaveLength(1);
      const tier = pricing.tiers![0]!;
      expect(tier.above_prompt_tokens, id).toBe(272_000);
      expect(nano(tier.prompt), id).toBe(nano(pricing.prompt) * 2n);
      expect(nano(tier.input_cache_read), id).toBe(nano(pricing.input_cache_read) * 2n);
      expect(nano(tier.input_cache_write), id).toBe(nano(pricing.input_cache_write) * 2n);
      expect(nano(tier.completion), id).toBe((nano(pricing.completion) * 3n) / 2n);
    }
  });

  it('double the 3.6, 3.7 and 3.8 Flash launch prices from 2027-01-01 00:00 UTC', () => {
    for (const id of ['gemini-3.6-flash', 'gemini-3.7-flash', 'gemini-3.8-flash']) {
      const rules = new PriceRules(byId(id).pricing);
      const before = rules.at(at('2026-12-31T23:59:59Z'));
      const after = rules.at(at('2027-01-01T00:00:00Z'));
      expect([before.prompt, before.completion, before.cacheRead], id).toEqual([750_000n, 3_750_000n, 75_000n]);
      expect([after.prompt, after.completion, after.cacheRead], id).toEqual([1_500_000n, 7_500_000n, 150_000n]);
    }
  });

  it('bill DeepSeek at half price outside 01:00-04:00 and 06:00-10:00 UTC', () => {
    const rules = new PriceRules(byId('deepseek-flash').pricing);
    const rates = (iso: string) => {
      const sheet = rules.at(at(iso));
      return [sheet.prompt, sheet.completion, sheet.cacheRead];
    };
    const peak = [300_000n, 1_200_000n, 6_000n];
    const offPeak = [150_000n, 600_000n, 3_000n];
    expect(rates('2026-11-27T01:00:00Z')).toEqual(peak);
    expect(rates('2026-11-27T03:59:00Z')).toEqual(peak);
    expect(rates('2026-11-27T04:00:00Z')).toEqual(offPeak);
    expect(rates('2026-11-27T06:30:00Z')).toEqual(peak);
    expect(rates('2026-11-27T10:00:00Z')).toEqual(offPeak);
    expect(rates('2026-11-27T23:30:00Z')).toEqual(offPeak);
    expect(rates('2026-11-28T00:59:00Z')).toEqual(offPeak);
  });

  it('serve the names Claude Code and Codex ask for by default', () => {
    const names = new Set(DEFAULT_MODELS.flatMap((m) => [m.id, ...(m.aliases ?? [])]));
    for (const name of ['claude-opus-4-8', 'claude-haiku-4-5-20251001', 'claude-haiku-4-5', 'gpt-6-astra'])
      expect(names.has(name), name).toBe(true);
  });
});
