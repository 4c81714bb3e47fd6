import type { Nano } from '../money/index.js';

/** Catalog prices: nano-USD per 1,000 tokens. */
export interface Price {
  promptPer1k: Nano;
  completionPer1k: Nano;
}

/** Cost of a request in nano-USD, rounded up to the next nano-USD (the only rounding money ever sees). */
export function costOf(price: Price, promptTokens: number, completionTokens: number): Nano {
  const scaled = BigInt(promptTokens) * price.promptPer1k + BigInt(completionTokens) * price.completionPer1k;
  return (scaled + 999n) / 1000n;
}

/** The most completion tokens `budget` pays for once `promptTokens` are paid (0 when it cannot). */
export function affordableCompletionTokens(price: Price, promptTokens: number, budget: Nano): number {
  const left = budget * 1000n - BigInt(promptTokens) * price.promptPer1k;
  if (left < 0n) return 0;
  if (price.completionPer1k === 0n) return Number.MAX_SAFE_INTEGER;
  const tokens = left / price.completionPer1k;
  return tokens > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(tokens);
}
