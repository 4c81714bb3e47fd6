/**
 * A key's spend against its `limit` in the current period (`limit_reset`: a UTC day, week or month; none: since the
 * key was made), as both credit states count it, and the refusal when the limit is reached.
 */
import { GatewayError } from '../errors/index.js';
import { usdString, type Nano } from '../money/index.js';
import { periodEnd, periodOf, type KeyRecord, type LimitReset } from '../storage/index.js';

/** The period `at` falls in for the key's limit, and what the database said the key spent in it (0 for a new one). */
export function keyPeriodSpend(key: KeyRecord, at = Date.now()): { period: string; spentNano: Nano } {
  const period = periodOf(key.limitReset, at);
  return { period, spentNano: keySpentIn(key, period) };
}

/** What the database said the key spent in `period`: its lookup's figure when made in that period, else 0. */
export function keySpentIn(key: KeyRecord, period: string): Nano {
  return key.period === period ? key.periodSpentNano : 0n;
}

/** What a refusal at a key's limit says: the limit, its period and when it starts again. */
export interface KeyLimitTerms {
  limitNano: Nano;
  reset: LimitReset | null;
}

const PERIOD: Record<LimitReset, string> = { daily: 'per UTC day', weekly: 'per UTC week', monthly: 'per UTC month' };

/** 403 `key_limit_exceeded`: the limit, its period and (with `retry_after`) when it starts again. */
export function keyLimitExceeded(terms: KeyLimitTerms, now = Date.now()): GatewayError {
  const limit = `${usdString(terms.limitNano)} USD`;
  if (terms.reset === null)
    return new GatewayError('key_limit_exceeded', {
      message: `This API key has reached its spend limit of ${limit} (limit_reset: none, it does not start again)`,
    });
  const resetsAt = periodEnd(terms.reset, now);
  return new GatewayError('key_limit_exceeded', {
    message:
      `This API key has reached its spend limit of ${limit} ${PERIOD[terms.reset]} (limit_reset: ${terms.reset}); ` +
      `it starts again at ${new Date(resetsAt).toISOString()}`,
    retryAfter: Math.max(1, Math.ceil((resetsAt - now) / 1000)),
  });
}
