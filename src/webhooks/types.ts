/** Event types a webhook may subscribe to, the defaults of spec 6.2 and the settings of the webhooks module. */
import type { GatewayEventType } from '../events/index.js';
import type { RetryConfig } from '../storage/index.js';

export const EVENT_TYPES: readonly GatewayEventType[] = [
  'credit.low_balance',
  'credit.recharge_failed',
  'llm.completion',
  'llm.error',
  'llm.streaming.start',
  'llm.streaming.chunk',
  'llm.streaming.end',
];

/**
 * Wildcards a registration may use. Neither includes `llm.streaming.chunk` (one delivery per streamed chunk):
 * that type is sent only to webhooks that name it (contract).
 */
export const WILDCARDS: Readonly<Record<string, readonly GatewayEventType[]>> = {
  '*': EVENT_TYPES.filter((type) => type !== 'llm.streaming.chunk'),
  'llm.*': EVENT_TYPES.filter((type) => type.startsWith('llm.') && type !== 'llm.streaming.chunk'),
};

export function expandType(type: string): readonly GatewayEventType[] {
  if (WILDCARDS[type]) return WILDCARDS[type];
  const known = EVENT_TYPES.find((eventType) => eventType === type);
  return known ? [known] : [];
}

export const DEFAULT_TIMEOUT_MS = 10_000;
export const DEFAULT_RETRY: RetryConfig = {
  maxAttempts: 3,
  initialDelay: 1_000,
  maxDelay: 30_000,
  backoffMultiplier: 2,
};

export interface WebhooksSettings {
  allow_private_urls: boolean;
  poll_interval_ms: number;
  concurrency: number;
  max_in_flight_per_endpoint: number;
  max_in_flight_per_account: number;
  refresh_ms: number;
  max_buffered: number;
}
