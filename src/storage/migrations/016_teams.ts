import { sql, type Kysely } from 'kysely';

/**
 * Teams and key governance.
 * - `users`: the people who sign in to the dashboard, one per email; each dashboard user of an account becomes one
 *   (`usr_` + the account id's tail), with its password and email status.
 * - `members`: who belongs to which account, with a role (`owner`, `admin`, `member`, `billing`); each account's
 *   dashboard user becomes its owner.
 * - `invitations`: an invite by email to join an account with a role, accepted once by its link (token hashed).
 * - `audit_log`: every change to members, roles, keys, limits, webhooks, settings and payments, written in the same
 *   transaction as the change (`before` and `after` as JSON).
 * - `api_keys` gains its governance: `limit_reset` (`daily`, `weekly`, `monthly` or null: the limit in
 *   `spend_limit_nano` never resets), `expires_at`, its own `requests_per_minute` / `tokens_per_minute`,
 *   `allowed_ips` (JSON array of CIDRs; empty = any) and `owner_user_id` (the member who made it).
 * - Sessions and email verifications name the user they belong to.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('users')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('email', 'text', (c) => c.notNull().unique())
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('email_status', 'text', (c) => c.notNull().defaultTo(sql`'unverified'`))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema
    .createTable('members')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id'))
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('members_pk', ['account_id', 'user_id'])
    .execute();
  await db.schema.createIndex('members_user').on('members').column('user_id').execute();
  await sql`INSERT INTO users (id, email, password_hash, email_status, created_at)
    SELECT replace(d.account_id, 'acct_', 'usr_'), a.email, d.password_hash, d.email_status, d.created_at
    FROM dashboard_users d JOIN accounts a ON a.id = d.account_id`.execute(db);
  await sql`INSERT INTO members (account_id, user_id, role, created_at)
    SELECT account_id, replace(account_id, 'acct_', 'usr_'), 'owner', created_at FROM dashboard_users`.execute(db);

  await db.schema
    .createTable('invitations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('role', 'text', (c) => c.notNull())
    // SHA-256 of the link's token: the database alone lets nobody join.
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('invited_by', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('expires_at', 'bigint', (c) => c.notNull())
    .addColumn('accepted_at', 'bigint')
    .addColumn('revoked_at', 'bigint')
    .execute();
  await db.schema.createIndex('invitations_account').on('invitations').column('account_id').execute();

  await db.schema
    .createTable('audit_log')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('actor_type', 'text', (c) => c.notNull())
    .addColumn('actor_id', 'text')
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('target_type', 'text', (c) => c.notNull())
    .addColumn('target_id', 'text')
    .addColumn('before', 'text')
    .addColumn('after', 'text')
    .addColumn('ip', 'text')
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('audit_account_time').on('audit_log').columns(['account_id', 'created_at']).execute();

  for (const [column, type] of [
    ['limit_reset', 'text'],
    ['expires_at', 'bigint'],
    ['requests_per_minute', 'bigint'],
    ['tokens_per_minute', 'bigint'],
    ['owner_user_id', 'text'],
  ] as const)
    await db.schema.alterTable('api_keys').addColumn(column, type).execute();
  await db.schema
    .alterTable('api_keys')
    .addColumn('allowed_ips', 'text', (c) => c.notNull().defaultTo(sql`'[]'`))
    .execute();

  await db.schema.alterTable('dashboard_sessions').addColumn('user_id', 'text').execute();
  await sql`UPDATE dashboard_sessions SET user_id = replace(account_id, 'acct_', 'usr_')`.execute(db);
  await db.schema.alterTable('email_verifications').addColumn('user_id', 'text').execute();
  await sql`UPDATE email_verifications SET user_id = replace(account_id, 'acct_', 'usr_')`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('email_verifications').dropColumn('user_id').execute();
  await db.schema.alterTable('dashboard_sessions').dropColumn('user_id').execute();
  for (const column of [
    'allowed_ips',
    'owner_user_id',
    'tokens_per_minute',
    'requests_per_minute',
    'expires_at',
    'limit_reset',
  ])
    await db.schema.alterTable('api_keys').dropColumn(column).execute();
  await db.schema.dropTable('audit_log').execute();
  await db.schema.dropTable('invitations').execute();
  await db.schema.dropTable('members').execute();
  await db.schema.dropTable('users').execute();
}

export const teams = { up, down };
