/**
 * What a request costs: its usage, kind by kind, at the sheet in force when it was admitted; and what to hold for
 * it before it runs, at the dearest rates that can apply.
 */
import type { Nano } from '../money/index.js';
import type { PriceSheet, TierSheet, TokenRates } from './sheet.js';
import { completionTokensOf, promptTokensOf, type TokenUsage } from './usage.js';

export interface Priced {
  costNano: Nano;
  /** The rates applied (the service tier's, and the long-context tier's when the prompt is above one). */
  rates: TokenRates;
  /** The long-context tier applied: its `abovePromptTokens`; undefined for the base rates. */
  tier: number | undefined;
  /** The service tier priced, when it is one of the model's own. */
  serviceTier: string | undefined;
  /** The fees applied: per request, per input image, per web search (nano-USD each). */
  fees: { request: Nano; image: Nano; webSearch: Nano };
}

/** The service tier's sheet when the model sells at it, else the standard one. */
export function serviceSheet(sheet: PriceSheet, serviceTier: string | undefined): TierSheet {
  return (serviceTier !== undefined && sheet.serviceTiers[serviceTier]) || sheet;
}

/** The rates for a prompt of `promptTokens`: the highest tier it is above, else the base. */
function ratesFor(sheet: TierSheet, promptTokens: number): { rates: TokenRates; tier: number | undefined } {
  let found: { rates: TokenRates; tier: number | undefined } = { rates: sheet, tier: undefined };
  for (const tier of sheet.tiers)
    if (promptTokens > tier.abovePromptTokens) found = { rates: tier, tier: tier.abovePromptTokens };
  return found;
}

/** The cost of `usage`, rounded up to the next nano-USD once (fees are whole nano-USD already). */
export function priceUsage(sheet: PriceSheet, usage: TokenUsage): Priced {
  const served = serviceSheet(sheet, usage.serviceTier);
  const { rates, tier } = ratesFor(served, promptTokensOf(usage));
  const per1k =
    BigInt(usage.input) * rates.prompt +
    BigInt(usage.cacheRead) * rates.cacheRead +
    BigInt(usage.cacheWrite) * rates.cacheWrite +
    BigInt(usage.cacheWrite1h) * rates.cacheWrite1h +
    BigInt(usage.output) * rates.completion +
    BigInt(usage.reasoning) * rates.reasoning;
  const feesNano = served.request + BigInt(usage.images) * served.image + BigInt(usage.webSearch) * served.webSearch;
  const costNano = (per1k + 999n) / 1000n + feesNano;
  const fees = { request: served.request, image: served.image, webSearch: served.webSearch };
  return { costNano, rates, tier, serviceTier: served === sheet ? undefined : usage.serviceTier, fees };
}

/** What a request may use at most, for its hold: the prompt's ceiling, fee-bearing units, and its service tier. */
export interface HoldShape {
  promptTokens: number;
  images: number;
  webSearches: number;
  serviceTier?: string | undefined;
}

/** The dearest rate per prompt token and per completion token that can apply, and the fees, over `sheets`. */
export interface HoldRates {
  promptPer1k: Nano;
  completionPer1k: Nano;
  feesNano: Nano;
}

export function holdRates(sheets: readonly PriceSheet[], shape: HoldShape): HoldRates {
  let promptPer1k = 0n;
  let completionPer1k = 0n;
  let feesNano = 0n;
  for (const sheet of sheets) {
    const served = [sheet, ...(shape.serviceTier !== undefined ? [serviceSheet(sheet, shape.serviceTier)] : [])];
    for (const tierSheet of served) {
      // Every tier up to the prompt's ceiling can apply.
      const candidates = [tierSheet, ...tierSheet.tiers.filter((t) => shape.promptTokens > t.abovePromptTokens)];
      for (const r of candidates) {
        promptPer1k = max(promptPer1k, r.prompt, r.cacheRead, r.cacheWrite, r.cacheWrite1h);
        completionPer1k = max(completionPer1k, r.completion, r.reasoning);
      }
      const fees =
        tierSheet.request + BigInt(shape.images) * tierSheet.image + BigInt(shape.webSearches) * tierSheet.webSearch;
      feesNano = max(feesNano, fees);
    }
  }
  return { promptPer1k, completionPer1k, feesNano };
}

const max = (...values: Nano[]): Nano => values.reduce((a, b) => (b > a ? b : a));

/**
 * The usage as billed: a report is trusted up to the model's context length (prompt) and the request's completion
 * bound; what is above is cut (plain input first, then writes and reads; output, then reasoning).
 */
export function capUsage(usage: TokenUsage, maxPrompt: number, maxCompletion: number): TokenUsage {
  const capped = { ...usage };
  let over = promptTokensOf(usage) - maxPrompt;
  for (const kind of ['input', 'cacheWrite1h', 'cacheWrite', 'cacheRead'] as const) {
    if (over <= 0) break;
    const cut = Math.min(over, capped[kind]);
    capped[kind] -= cut;
    over -= cut;
  }
  over = completionTokensOf(usage) - maxCompletion;
  for (const kind of ['output', 'reasoning'] as const) {
    if (over <= 0) break;
    const cut = Math.min(over, capped[kind]);
    capped[kind] -= cut;
    over -= cut;
  }
  return capped;
}

/** The ledger's record of a debit: its tokens per kind and the prices applied (nano-USD per 1,000 tokens, per unit). */
export function billingRecord(usage: TokenUsage, priced: Priced): string {
  const { rates } = priced;
  return JSON.stringify({
    tokens: {
      input: usage.input,
      input_cache_read: usage.cacheRead,
      input_cache_write: usage.cacheWrite,
      input_cache_write_1h: usage.cacheWrite1h,
      output: usage.output,
      internal_reasoning: usage.reasoning,
      images: usage.images,
      web_search: usage.webSearch,
    },
    prices_nano_per_1k: {
      prompt: String(rates.prompt),
      completion: String(rates.completion),
      input_cache_read: String(rates.cacheRead),
      input_cache_write: String(rates.cacheWrite),
      input_cache_write_1h: String(rates.cacheWrite1h),
      internal_reasoning: String(rates.reasoning),
    },
    fees_nano: {
      request: String(priced.fees.request),
      image: String(priced.fees.image),
      web_search: String(priced.fees.webSearch),
    },
    ...(priced.tier !== undefined ? { tier_above_prompt_tokens: priced.tier } : {}),
    ...(priced.serviceTier !== undefined ? { service_tier: priced.serviceTier } : {}),
    cost_nano: String(priced.costNano),
  });
}
