/** What a delivery's body looks like: the envelope of spec 6.2 (and 6.1's fields for credit.low_balance). */
import type { GatewayEvent } from '../events/index.js';
import { usdNumber } from '../money/index.js';
import type { FilterValue } from '../storage/index.js';

export type Envelope = Record<string, unknown> & {
  id: string;
  timestamp: string;
  event: string;
  data: Record<string, unknown>;
};

export function toEnvelope(event: GatewayEvent, id: string): Envelope {
  if (event.type === 'credit.low_balance') {
    return {
      id,
      // Spec 6.1's shape (`type`, `created`), plus the 6.2 envelope fields so one receiver rule set fits all events.
      type: event.type,
      event: event.type,
      created: event.created,
      timestamp: new Date(event.created * 1000).toISOString(),
      data: {
        balance: { credits: usdNumber(event.balanceNano), currency: 'USD' },
        threshold: usdNumber(event.thresholdNano),
        api_key_id: event.keyId,
        account_id: event.accountId,
      },
    };
  }
  if (event.type === 'credit.recharge_failed') {
    return {
      id,
      timestamp: new Date(event.at).toISOString(),
      event: event.type,
      data: {
        account_id: event.accountId,
        recharge_id: event.rechargeId,
        amount: usdNumber(event.amountNano),
        currency: 'USD',
        code: event.code,
        decline_code: event.declineCode,
        message: event.message,
        payment_intent_id: event.paymentIntentId,
        consecutive_failures: event.consecutiveFailures,
        auto_recharge_disabled: event.autoRechargeDisabled,
      },
    };
  }
  return {
    id,
    timestamp: new Date(event.at).toISOString(),
    event: event.type,
    data: { ...event.data },
  };
}

/** Exact match of every filter on a dotted path of the envelope (`data.model`, `data.metadata.provider`). */
export function matchesFilters(filters: Record<string, FilterValue> | undefined, envelope: Envelope): boolean {
  if (!filters) return true;
  for (const [path, expected] of Object.entries(filters)) {
    let value: unknown = envelope;
    for (const part of path.split('.')) {
      value =
        value !== null && typeof value === 'object' && !Array.isArray(value)
          ? (value as Record<string, unknown>)[part]
          : undefined;
    }
    if (value !== expected) return false;
  }
  return true;
}
