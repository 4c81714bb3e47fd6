import type { Kysely } from 'kysely';

/** Webhook registrations and their durable outbox of deliveries (dead letters are deliveries in status `dead`). */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('webhooks')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('url', 'text', (c) => c.notNull())
    .addColumn('secret', 'text', (c) => c.notNull())
    /** JSON: [{type, filters?}] */
    .addColumn('events', 'text', (c) => c.notNull())
    /** JSON: {name: value} */
    .addColumn('headers', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('timeout_ms', 'bigint', (c) => c.notNull())
    /** JSON: {maxAttempts, initialDelay, maxDelay, backoffMultiplier} */
    .addColumn('retry_config', 'text', (c) => c.notNull())
    .addColumn('description', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('webhooks_account').on('webhooks').column('account_id').execute();

  await db.schema
    .createTable('webhook_deliveries')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('webhook_id', 'text', (c) => c.notNull())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('event_id', 'text', (c) => c.notNull())
    .addColumn('event_type', 'text', (c) => c.notNull())
    /** The exact JSON body that is signed and sent. */
    .addColumn('payload', 'text', (c) => c.notNull())
    /** pending | delivering | succeeded | dead | failed (a test delivery that failed) */
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'bigint', (c) => c.notNull())
    /** While `delivering`: the claim's token and until when it holds (a crashed worker's claim expires). */
    .addColumn('lease_token', 'text')
    .addColumn('lease_until', 'bigint')
    .addColumn('last_status', 'bigint')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'bigint', (c) => c.notNull())
    .addColumn('completed_at', 'bigint')
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_due')
    .on('webhook_deliveries')
    .columns(['status', 'next_attempt_at'])
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_webhook')
    .on('webhook_deliveries')
    .columns(['webhook_id', 'id'])
    .execute();
  await db.schema
    .createIndex('webhook_deliveries_account')
    .on('webhook_deliveries')
    .columns(['account_id', 'status', 'id'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('webhook_deliveries').ifExists().execute();
  await db.schema.dropTable('webhooks').ifExists().execute();
}

export const webhooks = { up, down };
