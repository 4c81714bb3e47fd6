/**
 * The only code that changes a balance. Every change is a ledger row written in one transaction with the
 * balance update, so `balance = sum(ledger)` always holds; negative entries are clamped at the balance, so a
 * balance never goes below zero even when an operator's correction races a settlement.
 */
import type { Kysely, Selectable } from 'kysely';
import type { CommitResult, NewAccount, WriteBatch } from './batch.js';
import type { LedgerKind, LedgerRecord } from './records.js';
import type { Database, LedgerTable } from './schema.js';
import { big, num, numOrNull } from './values.js';

/** Writes a batch in one transaction: `SqliteWriter` (synchronous, embedded) or `PgWriter` (PostgreSQL). */
export interface MoneyWriter {
  commit(batch: WriteBatch): CommitResult | Promise<CommitResult>;
  createAccount(account: NewAccount): void | Promise<void>;
}

/** Runs a money write when no audited change holds the connection's transaction open (SQLite; see index.ts). */
export type Exclusive = <T>(write: () => T | Promise<T>) => Promise<T>;

export class LedgerStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly writer: MoneyWriter,
    private readonly exclusive: Exclusive = async (write) => write(),
  ) {}

  async commit(batch: WriteBatch): Promise<CommitResult> {
    return this.exclusive(() => this.writer.commit(batch));
  }

  /** Creates an account and its sign-up grant atomically. */
  async createAccount(account: NewAccount): Promise<void> {
    await this.exclusive(() => this.writer.createAccount(account));
  }

  /** Newest first; `before` is the id of the last entry of the previous page. */
  async list(accountId: string, options: { limit: number; before?: string }): Promise<LedgerRecord[]> {
    let query = this.db
      .selectFrom('ledger')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('id', 'desc')
      .limit(options.limit);
    if (options.before) query = query.where('id', '<', options.before);
    const rows = await query.execute();
    return rows.map(ledgerRecordOf);
  }

  async sum(accountId: string): Promise<bigint> {
    const row = await this.db
      .selectFrom('ledger')
      .select((eb) => eb.fn.sum<bigint | string | null>('amount_nano').as('total'))
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return big(row?.total ?? 0n);
  }

  /** How many auto-recharges an account had since a time, and what they added (the recharge limits). */
  async rechargesSince(accountId: string, sinceMs: number): Promise<{ count: number; totalNano: bigint }> {
    const row = await this.db
      .selectFrom('ledger')
      .select((eb) => [
        eb.fn.countAll<number | string | bigint>().as('count'),
        eb.fn.sum<bigint | string | null>('amount_nano').as('total'),
      ])
      .where('account_id', '=', accountId)
      .where('kind', '=', 'recharge')
      .where('created_at', '>=', BigInt(sinceMs))
      .executeTakeFirst();
    return { count: Number(row?.count ?? 0), totalNano: big(row?.total ?? 0n) };
  }

  async hasEntry(accountId: string, kind: LedgerKind): Promise<boolean> {
    const row = await this.db
      .selectFrom('ledger')
      .select('id')
      .where('account_id', '=', accountId)
      .where('kind', '=', kind)
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
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

export function ledgerRecordOf(r: Selectable<LedgerTable>): LedgerRecord {
  return {
    id: r.id,
    accountId: r.account_id,
    kind: r.kind,
    amountNano: big(r.amount_nano),
    balanceAfterNano: big(r.balance_after_nano),
    requestId: r.request_id,
    keyId: r.key_id,
    model: r.model,
    promptTokens: numOrNull(r.prompt_tokens),
    completionTokens: numOrNull(r.completion_tokens),
    note: r.note,
    createdAt: num(r.created_at),
    billing: r.billing,
    endpoint: r.endpoint,
    answerId: r.answer_id,
    detail: r.detail,
  };
}
