import { PostgresAdapter, sql, type Kysely } from 'kysely';

/**
 * Refunds and disputes debit what they take back in full, so a balance may go below zero (docs/adr): the
 * accounts' `balance_nano >= 0` check goes, and spending keeps the balance at or above zero in code (batch.ts).
 * `payment_reversals` keeps, per refunded charge or dispute, how much of the payment the ledger has taken back.
 * Card recharges gain the receipt link purchases have.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql`ALTER TABLE accounts DROP CONSTRAINT IF EXISTS accounts_balance_not_negative`.execute(db);
  } else {
    await dropSqliteBalanceCheck(db);
  }

  await db.schema
    .createTable('payment_reversals')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('processor', 'text', (c) => c.notNull())
    // refund | dispute
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('payment_reference', 'text', (c) => c.notNull())
    .addColumn('amount_nano', 'bigint', (c) => c.notNull())
    .addColumn('final', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('payment_reversals_account').on('payment_reversals').column('account_id').execute();

  // Stripe's receipt of a card recharge, like purchases keep theirs.
  await db.schema.alterTable('card_recharges').addColumn('receipt_url', 'text').execute();
}

/**
 * SQLite cannot drop a constraint: the table is rebuilt from its own definition less the check, in SQLite's
 * documented order (foreign keys off, copy, drop, rename, indexes back, foreign keys checked and on again).
 * Kysely runs SQLite migrations outside a transaction, so this one opens its own.
 */
async function dropSqliteBalanceCheck(db: Kysely<unknown>): Promise<void> {
  const table = await sql<{
    sql: string;
  }>`SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'accounts'`.execute(db);
  const definition = table.rows[0]?.sql ?? '';
  const check = /,\s*constraint\s+"?accounts_balance_not_negative"?\s+check\s*\(\s*balance_nano\s*>=\s*0\s*\)/i;
  if (!check.test(definition)) return;
  const rebuilt = definition
    .replace(check, '')
    .replace(/^create table\s+"?accounts"?/i, 'CREATE TABLE "accounts_rebuilt"');
  const indexes = await sql<{
    sql: string;
  }>`SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'accounts' AND sql IS NOT NULL`.execute(db);

  await sql`PRAGMA foreign_keys = OFF`.execute(db);
  try {
    await sql`BEGIN IMMEDIATE`.execute(db);
    try {
      await sql.raw(rebuilt).execute(db);
      await sql`INSERT INTO accounts_rebuilt SELECT * FROM accounts`.execute(db);
      await sql`DROP TABLE accounts`.execute(db);
      await sql`ALTER TABLE accounts_rebuilt RENAME TO accounts`.execute(db);
      for (const index of indexes.rows) await sql.raw(index.sql).execute(db);
      const broken = await sql`PRAGMA foreign_key_check`.execute(db);
      if (broken.rows.length > 0) throw new Error('rebuilding accounts would break foreign keys');
      await sql`COMMIT`.execute(db);
    } catch (error) {
      await sql`ROLLBACK`.execute(db);
      throw error;
    }
  } finally {
    await sql`PRAGMA foreign_keys = ON`.execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('card_recharges').dropColumn('receipt_url').execute();
  await db.schema.dropTable('payment_reversals').execute();
}

export const paymentReversals = { up, down };
