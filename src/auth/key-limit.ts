/** Where a key stands against its spend limit now: used in the period, left, and when the period starts again. */
import { periodEnd, periodOf, type KeyRecord, type LimitReset } from '../storage/index.js';

export interface KeyLimitStatus {
  limitNano: bigint | null;
  reset: LimitReset | null;
  /** Spent in the current period (since the key was made, for a limit that never resets). */
  usedNano: bigint;
  /** What the limit leaves (never negative); null without a limit. */
  remainingNano: bigint | null;
  /** When the period ends (Unix ms); null for a limit that never resets. */
  resetsAt: number | null;
}

/**
 * As the key record says, at `at`: a record looked up in an earlier period counts nothing spent in this one.
 * Holds in flight are not in it (admission counts those too).
 */
export function keyLimitStatus(key: KeyRecord, at = Date.now()): KeyLimitStatus {
  const reset = key.limitReset;
  const usedNano = key.period === periodOf(reset, at) ? key.periodSpentNano : 0n;
  const limitNano = key.spendLimitNano;
  const left = limitNano === null ? null : limitNano - usedNano;
  return {
    limitNano,
    reset,
    usedNano,
    remainingNano: left === null ? null : left > 0n ? left : 0n,
    resetsAt: reset === null ? null : periodEnd(reset, at),
  };
}
