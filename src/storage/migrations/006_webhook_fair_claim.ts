import type { Kysely } from 'kysely';

/** Each webhook's due deliveries in order, for the fair claim's per-endpoint seeks (storage/webhook-claim.ts). */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('webhook_deliveries_webhook_due')
    .on('webhook_deliveries')
    .columns(['webhook_id', 'status', 'next_attempt_at', 'id'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('webhook_deliveries_webhook_due').execute();
}

export const webhookFairClaim = { up, down };
