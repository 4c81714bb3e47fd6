import type { Kysely } from 'kysely';

/** An owner can close an account: `closed_at` marks it; its ledger, balance and audit log are kept. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('accounts').addColumn('closed_at', 'bigint').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('accounts').dropColumn('closed_at').execute();
}

export const accountClosing = { up, down };
