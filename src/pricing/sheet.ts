/**
 * A model's prices as configured (`pricing` in the catalog) compiled into the sheet in force at a moment: dated
 * changes and daily windows applied, every kind filled (a kind not priced costs what `prompt` or `completion`
 * costs), amounts in nano-USD.
 */
import type { PricingConfig } from '../config/index.js';
import { parseUsd, type Nano } from '../money/index.js';

/** Nano-USD per 1,000 tokens of each kind. */
export interface TokenRates {
  prompt: Nano;
  completion: Nano;
  cacheRead: Nano;
  cacheWrite: Nano;
  cacheWrite1h: Nano;
  reasoning: Nano;
}

/** Nano-USD per unit. */
export interface Fees {
  request: Nano;
  image: Nano;
  webSearch: Nano;
}

export interface Tier extends TokenRates {
  /** The tier's rates apply to every token of a request whose prompt is above this. */
  abovePromptTokens: number;
}

/** The prices of one service tier: base rates and fees, then long-context tiers in ascending order. */
export interface TierSheet extends TokenRates, Fees {
  tiers: readonly Tier[];
}

export interface PriceSheet extends TierSheet {
  /** The service tiers the model is sold at besides the standard one, by the provider's name for them. */
  serviceTiers: Readonly<Record<string, TierSheet>>;
}

type Overrides = Omit<PricingConfig, 'service_tiers' | 'changes' | 'daily' | 'prompt' | 'completion'> & {
  prompt?: number | undefined;
  completion?: number | undefined;
};

const MINUTE_MS = 60_000;

/** A model's configured pricing, ready to give the sheet in force at any moment. */
export class PriceRules {
  private readonly changes: ReadonlyArray<{ from: number; fields: Overrides }>;
  private readonly base: PriceSheet;

  constructor(private readonly config: PricingConfig) {
    this.changes = (config.changes ?? [])
      .map(({ effective_from, ...fields }) => ({ from: Date.parse(effective_from), fields }))
      .sort((a, b) => a.from - b.from);
    this.base = this.compile(config);
  }

  /** The sheet in force at `at` (epoch ms): the changes effective by then, and the daily window that covers it. */
  at(at: number): PriceSheet {
    const effective = this.changes.filter((change) => change.from <= at);
    const window = this.config.daily?.find((w) => inWindow(w.from_utc, w.to_utc, at));
    if (effective.length === 0 && !window) return this.base;
    const merged: PricingConfig = { ...this.config };
    for (const change of effective) Object.assign(merged, change.fields);
    if (window) {
      const { from_utc: _from, to_utc: _to, ...prices } = window;
      Object.assign(merged, prices);
    }
    return this.compile(merged);
  }

  private compile(config: PricingConfig): PriceSheet {
    const standard = tierSheet(config, undefined);
    const serviceTiers: Record<string, TierSheet> = {};
    for (const [name, prices] of Object.entries(config.service_tiers ?? {})) {
      serviceTiers[name] = tierSheet({ ...config, ...prices }, prices.tiers ? undefined : standard.tiers);
    }
    return { ...standard, serviceTiers };
  }
}

function tierSheet(config: Overrides & { prompt: number; completion: number }, tiers: readonly Tier[] | undefined) {
  const rates = tokenRates(config, undefined);
  return {
    ...rates,
    request: usd(config.request),
    image: usd(config.image),
    webSearch: usd(config.web_search),
    tiers:
      tiers ??
      (config.tiers ?? [])
        .map((tier) => ({ abovePromptTokens: tier.above_prompt_tokens, ...tokenRates(tier, rates) }))
        .sort((a, b) => a.abovePromptTokens - b.abovePromptTokens),
  };
}

/** Rates of `prices`, each kind absent falling back on `base`'s (a tier), or on prompt / completion (the base). */
function tokenRates(prices: Partial<Record<keyof Overrides, unknown>>, base: TokenRates | undefined): TokenRates {
  const rate = (value: unknown, fallback: Nano): Nano =>
    typeof value === 'number' || typeof value === 'string' ? parseUsd(value) : fallback;
  const prompt = rate(prices.prompt, base?.prompt ?? 0n);
  const completion = rate(prices.completion, base?.completion ?? 0n);
  const cacheWrite = rate(prices.input_cache_write, base?.cacheWrite ?? prompt);
  return {
    prompt,
    completion,
    cacheRead: rate(prices.input_cache_read, base?.cacheRead ?? prompt),
    cacheWrite,
    cacheWrite1h: rate(prices.input_cache_write_1h, base?.cacheWrite1h ?? cacheWrite),
    reasoning: rate(prices.internal_reasoning, base?.reasoning ?? completion),
  };
}

const usd = (value: number | undefined): Nano => (value === undefined ? 0n : parseUsd(value));

/** Minutes since 00:00 UTC of "HH:MM". */
const minutesOf = (hhmm: string): number => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));

function inWindow(from: string, to: string, at: number): boolean {
  const minute = Math.floor(at / MINUTE_MS) % 1440;
  const [start, end] = [minutesOf(from), minutesOf(to)];
  return start <= end ? minute >= start && minute < end : minute >= start || minute < end;
}
