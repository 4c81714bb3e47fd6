import type { Kysely } from 'kysely';

/**
 * The Responses API's response ids, each bound to the account it was answered to: `previous_response_id` is
 * accepted only from that account, and only when the provider that holds the response keeps state.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('responses')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    // The provider that answered (and, when `stateful`, holds the response).
    .addColumn('provider_id', 'text', (c) => c.notNull())
    // 1 when the provider stored the response (OpenAI natively, `store` not false); 0 for a translated answer.
    .addColumn('stateful', 'integer', (c) => c.notNull())
    .addColumn('created_at', 'bigint', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('responses').execute();
}

export const responses = { up, down };
