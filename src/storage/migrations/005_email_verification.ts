import { sql, type Kysely } from 'kysely';

/**
 * Email verification of self-serve accounts and the per-address sign-up count.
 * `dashboard_users.email_status`: 'pending' (signed up where SMTP is configured: no sign-in, no grant until the
 * emailed link is followed), 'verified', or 'unverified' (signed up without SMTP, or before this migration).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('dashboard_users')
    .addColumn('email_status', 'text', (c) => c.notNull().defaultTo(sql`'unverified'`))
    .execute();

  await db.schema
    .createTable('email_verifications')
    // SHA-256 of the emailed token: the database alone cannot verify anyone.
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    // The password chosen with this sign-up: set when the link is followed, so a squatter's password never is.
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('used_at', 'bigint')
    .execute();
  await db.schema.createIndex('email_verifications_account').on('email_verifications').column('account_id').execute();

  await db.schema
    .createTable('signup_attempts')
    .addColumn('ip', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('signup_attempts_ip').on('signup_attempts').columns(['ip', 'created_at']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('signup_attempts').execute();
  await db.schema.dropTable('email_verifications').execute();
  await db.schema.alterTable('dashboard_users').dropColumn('email_status').execute();
}

export const emailVerification = { up, down };
