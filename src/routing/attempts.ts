/** The wait between two attempts at one deployment. */
import { setTimeout as sleep } from 'node:timers/promises';

/** Exponential backoff with jitter: base * 2^attempt, capped, then scaled by 50-100 %. */
export function backoffMs(attempt: number, baseMs: number, maxMs: number): number {
  const ceiling = Math.min(maxMs, baseMs * 2 ** attempt);
  return Math.round(ceiling * (0.5 + Math.random() * 0.5));
}

/** Waits, unless the client goes away first (then rejects with the abort reason). */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return ms > 0 ? sleep(ms, undefined, { signal }) : Promise.resolve();
}
