import type { Kysely } from 'kysely';
import { mailboxOf } from '../mailboxes.js';

const BATCH = 500;

/** The columns this migration reads and writes, as they are at this migration. */
interface Tables {
  accounts: { id: string; email: string; created_at: bigint | number };
  ledger: { id: string; account_id: string; kind: string };
  signup_grant_mailboxes: { mailbox: string; account_id: string; created_at: bigint | number };
}

/**
 * One sign-up grant per mailbox: `signup_grant_mailboxes` holds the mailbox (`mailboxOf`) of every account credited
 * the grant, its primary key refusing a second. Existing accounts with a grant are entered, oldest first; of two
 * that share a mailbox, the older holds it.
 */
export async function up(untyped: Kysely<unknown>): Promise<void> {
  const db = untyped as unknown as Kysely<Tables>;
  await db.schema
    .createTable('signup_grant_mailboxes')
    .addColumn('mailbox', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();

  const granted = await db
    .selectFrom('accounts')
    .select(['id', 'email', 'created_at'])
    .where((eb) =>
      eb.exists(
        eb
          .selectFrom('ledger')
          .select('ledger.id')
          .whereRef('ledger.account_id', '=', 'accounts.id')
          .where('ledger.kind', '=', 'grant'),
      ),
    )
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  for (let i = 0; i < granted.length; i += BATCH) {
    const seen = new Set<string>();
    const rows = granted
      .slice(i, i + BATCH)
      .map((account) => ({
        mailbox: mailboxOf(account.email),
        account_id: account.id,
        created_at: account.created_at,
      }))
      .filter((row) => !seen.has(row.mailbox) && seen.add(row.mailbox));
    await db
      .insertInto('signup_grant_mailboxes')
      .values(rows)
      .onConflict((oc) => oc.column('mailbox').doNothing())
      .execute();
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('signup_grant_mailboxes').execute();
}

export const signupGrantMailboxes = { up, down };
