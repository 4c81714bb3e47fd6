import { sql, type Kysely } from 'kysely';

/**
 * Auto-recharges charged to a saved card: one row per attempt. A unique index over an account's pending rows
 * keeps one recharge in flight per account, whichever replica starts it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('card_recharges')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('amount_nano', 'bigint', (c) => c.notNull())
    // pending | succeeded | failed
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('processor', 'text', (c) => c.notNull())
    .addColumn('payment_intent_id', 'text')
    .addColumn('failure', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('claimed_at', 'bigint', (c) => c.notNull())
    .addColumn('settled_at', 'bigint')
    .execute();
  await db.schema.createIndex('card_recharges_account').on('card_recharges').columns(['account_id', 'id']).execute();
  await db.schema
    .createIndex('card_recharges_one_in_flight')
    .on('card_recharges')
    .column('account_id')
    .unique()
    .where(sql.ref('status'), '=', 'pending')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('card_recharges').execute();
}

export const cardRecharges = { up, down };
