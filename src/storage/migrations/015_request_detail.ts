import type { Kysely } from 'kysely';

/**
 * Every charge explained. A debit's ledger row also keeps the endpoint it was made on, the id the client got
 * (`answer_id`: `chatcmpl-…`, `msg_…`, `resp_…`), and its detail as JSON text (provider, latency, time to first
 * token, finish reason, streamed, cut by the client). `usage_daily_keys` counts each key's requests, tokens and
 * credits per UTC day, test keys included (their requests write no ledger row).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('ledger').addColumn('endpoint', 'text').execute();
  await db.schema.alterTable('ledger').addColumn('answer_id', 'text').execute();
  await db.schema.alterTable('ledger').addColumn('detail', 'text').execute();
  await db.schema.createIndex('ledger_answer').on('ledger').column('answer_id').execute();
  await db.schema
    .createTable('usage_daily_keys')
    .addColumn('key_id', 'text', (c) => c.notNull())
    .addColumn('day', 'text', (c) => c.notNull())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('requests', 'bigint', (c) => c.notNull())
    .addColumn('prompt_tokens', 'bigint', (c) => c.notNull())
    .addColumn('completion_tokens', 'bigint', (c) => c.notNull())
    .addColumn('credits_nano', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('usage_daily_keys_pk', ['key_id', 'day'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('usage_daily_keys').execute();
  await db.schema.dropIndex('ledger_answer').execute();
  await db.schema.alterTable('ledger').dropColumn('detail').execute();
  await db.schema.alterTable('ledger').dropColumn('answer_id').execute();
  await db.schema.alterTable('ledger').dropColumn('endpoint').execute();
}

export const requestDetail = { up, down };
