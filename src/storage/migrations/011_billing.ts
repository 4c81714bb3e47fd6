import type { Kysely } from 'kysely';

/**
 * Per-kind billing. `ledger.billing` holds, as JSON text, a debit's tokens per kind and the prices applied (null for
 * entries without it). `responses.context_tokens` holds the tokens a stored response carries into a request that
 * continues it (its input plus output tokens; null until known).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('ledger').addColumn('billing', 'text').execute();
  await db.schema.alterTable('responses').addColumn('context_tokens', 'bigint').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('responses').dropColumn('context_tokens').execute();
  await db.schema.alterTable('ledger').dropColumn('billing').execute();
}

export const billing = { up, down };
