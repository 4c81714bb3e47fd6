import type { Kysely } from 'kysely';

/** Purchases by status and age: the periodic check of purchases still pending reads the recent pending ones. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('credit_purchases_status_created')
    .on('credit_purchases')
    .columns(['status', 'created_at'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('credit_purchases_status_created').execute();
}

export const pendingPurchases = { up, down };
