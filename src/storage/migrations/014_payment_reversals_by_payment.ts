import type { Kysely } from 'kysely';

/**
 * A payment's refunds and disputes are summed together on every reversal (never more than the payment taken back):
 * an index finds them by payment.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createIndex('payment_reversals_payment')
    .on('payment_reversals')
    .columns(['processor', 'payment_reference'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropIndex('payment_reversals_payment').execute();
}

export const paymentReversalsByPayment = { up, down };
