import type { Nano } from '../money/index.js';

/**
 * The contract's crossing rule: a threshold fires when a debit takes the balance from at-or-above it to below
 * it. It re-arms by itself: only a rise back above the threshold makes the next crossing possible.
 */
export function findCrossings(before: Nano, after: Nano, thresholds: readonly Nano[]): Nano[] {
  return thresholds.filter((threshold) => before >= threshold && after < threshold);
}
