/**
 * Outbox rows the money writers insert in a batch's transaction (the events its entries caused): new deliveries,
 * due at once. An id already present is skipped, so a retried batch never writes a row twice.
 */
import type { NewDelivery } from './webhooks.js';

export const DELIVERY_COLUMNS =
  'id, webhook_id, account_id, event_id, event_type, payload, status, attempts, next_attempt_at, created_at, updated_at';

/** One row's values in `DELIVERY_COLUMNS` order. */
export function deliveryValues(
  d: NewDelivery,
): [string, string, string, string, string, string, string, number, number, number, number] {
  return [d.id, d.webhookId, d.accountId, d.eventId, d.eventType, d.payload, 'pending', 0, d.at, d.at, d.at];
}
