import type { Kysely } from 'kysely';

/**
 * Credit bought through a payment processor (Stripe Checkout): the purchases, the processor events already
 * applied (so a redelivered event changes nothing), and each account's customer and saved payment method there.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('credit_purchases')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('amount_nano', 'bigint', (c) => c.notNull())
    .addColumn('currency', 'text', (c) => c.notNull())
    // pending | paid | expired | failed (phase B adds refunded)
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('processor', 'text', (c) => c.notNull())
    .addColumn('checkout_session_id', 'text', (c) => c.unique())
    .addColumn('checkout_url', 'text')
    .addColumn('payment_intent_id', 'text')
    .addColumn('receipt_url', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('paid_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('credit_purchases_account')
    .on('credit_purchases')
    .columns(['account_id', 'id'])
    .execute();

  await db.schema
    .createTable('payment_events')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('processor', 'text', (c) => c.notNull())
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('received_at', 'bigint', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('payment_customers')
    .addColumn('account_id', 'text', (c) => c.primaryKey().references('accounts.id'))
    .addColumn('processor', 'text', (c) => c.notNull())
    .addColumn('customer_id', 'text', (c) => c.notNull().unique())
    .addColumn('payment_method_id', 'text')
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['payment_customers', 'payment_events', 'credit_purchases'])
    await db.schema.dropTable(table).execute();
}

export const creditPurchases = { up, down };
