import { sql, type Kysely } from 'kysely';

/**
 * People only: `dashboard_users` (one password per account, before migration 016) is dropped; `users` and
 * `members` hold what it held. A row 016 did not copy (none is expected) is copied first.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`INSERT INTO users (id, email, password_hash, email_status, created_at)
    SELECT replace(d.account_id, 'acct_', 'usr_'), a.email, d.password_hash, d.email_status, d.created_at
    FROM dashboard_users d JOIN accounts a ON a.id = d.account_id
    WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.id = replace(d.account_id, 'acct_', 'usr_') OR u.email = a.email)`.execute(
    db,
  );
  await sql`INSERT INTO members (account_id, user_id, role, created_at)
    SELECT d.account_id, replace(d.account_id, 'acct_', 'usr_'), 'owner', d.created_at FROM dashboard_users d
    WHERE EXISTS (SELECT 1 FROM users u WHERE u.id = replace(d.account_id, 'acct_', 'usr_'))
    AND NOT EXISTS (SELECT 1 FROM members m WHERE m.account_id = d.account_id AND m.user_id = replace(d.account_id, 'acct_', 'usr_'))`.execute(
    db,
  );
  await db.schema.dropTable('dashboard_users').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('dashboard_users')
    .addColumn('account_id', 'text', (c) => c.primaryKey().references('accounts.id'))
    .addColumn('password_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .addColumn('email_status', 'text', (c) => c.notNull().defaultTo(sql`'unverified'`))
    .execute();
  await sql`INSERT INTO dashboard_users (account_id, password_hash, created_at, email_status)
    SELECT replace(id, 'usr_', 'acct_'), password_hash, created_at, email_status FROM users
    WHERE EXISTS (SELECT 1 FROM accounts a WHERE a.id = replace(users.id, 'usr_', 'acct_'))`.execute(db);
}

export const peopleOnly = { up, down };
