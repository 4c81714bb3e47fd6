import type { RetryConfig } from '../storage/index.js';

/** Share of a delay taken off at random, so receivers that failed together are not retried in lockstep. */
export const JITTER = 0.1;

/**
 * The wait after failed attempt `attempt` (1-based): `initialDelay * backoffMultiplier^(attempt-1)`, capped at
 * `maxDelay`, minus up to 10% jitter (never more than the formula, never above the cap).
 */
export function retryDelay(retry: RetryConfig, attempt: number, random: () => number = Math.random): number {
  const base = Math.min(retry.initialDelay * retry.backoffMultiplier ** (attempt - 1), retry.maxDelay);
  return Math.round(base * (1 - JITTER * random()));
}
