/**
 * The only code that changes a balance. Every change is a ledger row written in the same transaction as the
 * balance update, so `balance = sum(ledger)` always holds; negative entries are clamped at the balance, so a
 * balance never goes below zero even when an operator's correction races a settlement.
 */
import type { Kysely, Transaction } from 'kysely';
import { accountsOf, planBatch, type AccountBalance, type CommitResult, type UsageDelta, type WriteBatch } from './batch.js';
import type { Dialect } from './connect.js';
import type { LedgerKind, LedgerRecord } from './records.js';
import type { Database } from './schema.js';
import type { NewAccount, SqliteWriter } from './sqlite-writer.js';
import { big, num, numOrNull } from './values.js';

export class LedgerStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: Dialect,
    /** SQLite only: the synchronous writer every runtime transaction goes through. */
    private readonly sqlite?: SqliteWriter,
  ) {}

  async commit(batch: WriteBatch): Promise<CommitResult> {
    if (this.sqlite) return this.sqlite.commit(batch);
    return this.db.transaction().execute((trx) => this.commitIn(trx, batch));
  }

  /** Creates an account and its sign-up grant atomically. */
  async createAccount(account: NewAccount): Promise<void> {
    if (this.sqlite) return this.sqlite.createAccount(account);
    await this.db.transaction().execute(async (trx) => {
      await trx
        .insertInto('accounts')
        .values({ id: account.id, email: account.email, plan: account.plan, balance_nano: 0n, version: 0n, settings: account.settings, created_at: Date.now() })
        .execute();
      if (account.grantNano > 0n) {
        await this.commitIn(trx, { entries: [{ accountId: account.id, kind: 'grant', amountNano: account.grantNano, note: 'sign-up credit' }] });
      }
    });
  }

  private async commitIn(trx: Transaction<Database>, batch: WriteBatch): Promise<CommitResult> {
    const current = new Map<string, AccountBalance>();
    for (const accountId of accountsOf(batch)) {
      let query = trx.selectFrom('accounts').select(['balance_nano', 'version']).where('id', '=', accountId);
      if (this.dialect === 'postgres') query = query.forUpdate();
      const row = await query.executeTakeFirst();
      if (row) current.set(accountId, { balanceNano: big(row.balance_nano), version: big(row.version) });
    }
    const plan = planBatch(batch, current, await writtenDebits(trx, batch));
    for (const [accountId, balance] of plan.result.balances) {
      await trx.updateTable('accounts').set({ balance_nano: balance.balanceNano, version: balance.version }).where('id', '=', accountId).execute();
    }
    // Chunked to stay under the bound-parameter limits.
    for (let i = 0; i < plan.ledger.length; i += 500) await trx.insertInto('ledger').values(plan.ledger.slice(i, i + 500)).execute();
    await upsertUsage(trx, plan.usage);
    for (const [keyId, spent] of plan.keySpend) {
      await trx.updateTable('api_keys').set((eb) => ({ spent_nano: eb('spent_nano', '+', spent) })).where('id', '=', keyId).execute();
    }
    for (const [keyId, at] of plan.keysUsed) await trx.updateTable('api_keys').set({ last_used_at: at }).where('id', '=', keyId).execute();
    if (plan.invoices.length) await trx.insertInto('invoices').values(plan.invoices).execute();
    return plan.result;
  }

  /** Newest first; `before` is the id of the last entry of the previous page. */
  async list(accountId: string, options: { limit: number; before?: string }): Promise<LedgerRecord[]> {
    let query = this.db.selectFrom('ledger').selectAll().where('account_id', '=', accountId).orderBy('id', 'desc').limit(options.limit);
    if (options.before) query = query.where('id', '<', options.before);
    const rows = await query.execute();
    return rows.map((r) => ({
      id: r.id,
      accountId: r.account_id,
      kind: r.kind as LedgerKind,
      amountNano: big(r.amount_nano),
      balanceAfterNano: big(r.balance_after_nano),
      requestId: r.request_id,
      keyId: r.key_id,
      model: r.model,
      promptTokens: numOrNull(r.prompt_tokens),
      completionTokens: numOrNull(r.completion_tokens),
      note: r.note,
      createdAt: num(r.created_at),
    }));
  }

  async sum(accountId: string): Promise<bigint> {
    const row = await this.db
      .selectFrom('ledger')
      .select((eb) => eb.fn.sum<bigint | string | null>('amount_nano').as('total'))
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return big(row?.total ?? 0n);
  }

  /** Debits (as positive nano-USD) of one request; for idempotency and tests. */
  async debitedFor(requestId: string): Promise<bigint> {
    const row = await this.db
      .selectFrom('ledger')
      .select((eb) => eb.fn.sum<bigint | string | null>('amount_nano').as('total'))
      .where('request_id', '=', requestId)
      .where('kind', '=', 'debit')
      .executeTakeFirst();
    return -big(row?.total ?? 0n);
  }
}

async function upsertUsage(trx: Transaction<Database>, deltas: UsageDelta[]): Promise<void> {
  for (let i = 0; i < deltas.length; i += 500) {
    const values = deltas.slice(i, i + 500).map((d) => ({
      account_id: d.accountId,
      day: d.day,
      environment: d.environment,
      model: d.model,
      requests: d.requests,
      prompt_tokens: d.promptTokens,
      completion_tokens: d.completionTokens,
      credits_nano: d.creditsNano,
    }));
    await trx
      .insertInto('usage_daily')
      .values(values)
      .onConflict((oc) =>
        oc.columns(['account_id', 'day', 'environment', 'model']).doUpdateSet((eb) => ({
          requests: eb('usage_daily.requests', '+', eb.ref('excluded.requests')),
          prompt_tokens: eb('usage_daily.prompt_tokens', '+', eb.ref('excluded.prompt_tokens')),
          completion_tokens: eb('usage_daily.completion_tokens', '+', eb.ref('excluded.completion_tokens')),
          credits_nano: eb('usage_daily.credits_nano', '+', eb.ref('excluded.credits_nano')),
        })),
      )
      .execute();
  }
}

/**
 * Debits of this batch's requests that are already in the ledger: a commit can succeed while the committer
 * sees an error (a lost acknowledgement on PostgreSQL), and the committer then retries the batch. The SQLite
 * writer applies the same rule (`SqliteWriter.writtenDebits`).
 */
async function writtenDebits(trx: Transaction<Database>, batch: WriteBatch): Promise<Map<string, bigint>> {
  const ids = batch.entries.flatMap((e) => (e.kind === 'debit' && e.requestId ? [e.requestId] : []));
  if (ids.length === 0) return new Map();
  const rows = await trx
    .selectFrom('ledger')
    .select(['request_id', 'amount_nano'])
    .where('kind', '=', 'debit')
    .where('request_id', 'in', ids)
    .execute();
  return new Map(rows.map((r) => [r.request_id!, big(r.amount_nano)]));
}
