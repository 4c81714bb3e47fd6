import type { Kysely } from 'kysely';

/** Idempotency keys of chat requests: one row per (account, key), with the first answer once there is one. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('idempotency_keys')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('idempotency_key', 'text', (c) => c.notNull())
    // SHA-256 of the request (environment + canonical JSON body): a reuse with another request is refused.
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    // 'pending' while the first request runs, 'done' once its answer is stored.
    .addColumn('state', 'text', (c) => c.notNull())
    // Names the claim of one request: only its owner may complete or release a pending row.
    .addColumn('claim', 'text', (c) => c.notNull())
    .addColumn('request_id', 'text', (c) => c.notNull())
    .addColumn('response', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('idempotency_keys_pk', ['account_id', 'idempotency_key'])
    .execute();
  await db.schema.createIndex('idempotency_keys_expiry').on('idempotency_keys').column('expires_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('idempotency_keys').execute();
}

export const idempotency = { up, down };
