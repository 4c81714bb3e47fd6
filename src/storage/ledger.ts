/**
 * The only code that changes a balance. Every change is a ledger row written in the same transaction as the
 * balance update, so `balance = sum(ledger)` always holds; negative entries are clamped at the balance, so a
 * balance never goes below zero even when an operator's correction races a settlement.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Dialect } from './connect.js';
import type { LedgerKind, LedgerRecord, UsageTotals } from './records.js';
import type { Database } from './schema.js';
import { big, newId, num, numOrNull } from './values.js';

export interface UsageSlot {
  day: string;
  environment: string;
  model: string;
}

export interface LedgerEntryInput {
  accountId: string;
  kind: LedgerKind;
  /** Signed nano-USD; negative amounts are clamped so the balance stays >= 0. */
  amountNano: bigint;
  requestId?: string;
  keyId?: string;
  model?: string;
  promptTokens?: number;
  completionTokens?: number;
  note?: string;
  /** Counts this entry's request and tokens (and the debited amount) in the daily usage. */
  usage?: UsageSlot;
}

export interface UsageDelta extends UsageSlot, UsageTotals {
  accountId: string;
}

export interface InvoiceInput {
  accountId: string;
  month: string;
  kind: string;
  amountNano: bigint;
  processor: string;
  reference: string;
}

export interface WriteBatch {
  entries: LedgerEntryInput[];
  /** Usage of requests that moved no money (test keys, free answers). */
  usage?: UsageDelta[];
  keysUsed?: Array<{ keyId: string; at: number }>;
  invoices?: InvoiceInput[];
}

export interface AccountBalance {
  balanceNano: bigint;
  version: bigint;
}

export interface CommitResult {
  /** The amount actually applied for each entry, in input order. */
  applied: bigint[];
  /** The account's balance right after each entry, in input order. */
  balancesAfter: bigint[];
  balances: Map<string, AccountBalance>;
}

export class LedgerStore {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly dialect: Dialect,
  ) {}

  async commit(batch: WriteBatch): Promise<CommitResult> {
    return this.db.transaction().execute((trx) => this.commitIn(trx, batch));
  }

  /** Creates an account and its sign-up grant atomically. */
  async createAccount(account: { id: string; email: string; plan: string; settings: string; grantNano: bigint }): Promise<void> {
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

  async commitIn(trx: Transaction<Database>, batch: WriteBatch): Promise<CommitResult> {
    const now = Date.now();
    const applied: bigint[] = new Array<bigint>(batch.entries.length).fill(0n);
    const balancesAfter: bigint[] = new Array<bigint>(batch.entries.length).fill(0n);
    const balances = new Map<string, AccountBalance>();
    const rows: Array<Parameters<typeof insertLedger>[1][number]> = [];
    const usage = new Map<string, UsageDelta>();
    const keySpend = new Map<string, bigint>();

    const byAccount = new Map<string, number[]>();
    batch.entries.forEach((entry, index) => {
      const list = byAccount.get(entry.accountId) ?? [];
      list.push(index);
      byAccount.set(entry.accountId, list);
    });

    for (const accountId of [...byAccount.keys()].sort()) {
      let query = trx.selectFrom('accounts').select(['balance_nano', 'version']).where('id', '=', accountId);
      if (this.dialect === 'postgres') query = query.forUpdate();
      const current = await query.executeTakeFirst();
      if (!current) throw new Error(`ledger entry for unknown account ${accountId}`);
      let balance = big(current.balance_nano);
      for (const index of byAccount.get(accountId)!) {
        const entry = batch.entries[index]!;
        const amount = entry.amountNano < 0n && -entry.amountNano > balance ? -balance : entry.amountNano;
        applied[index] = amount;
        balance += amount;
        balancesAfter[index] = balance;
        if (amount !== 0n) {
          rows.push({
            id: newId('led'),
            account_id: accountId,
            kind: entry.kind,
            amount_nano: amount,
            balance_after_nano: balance,
            request_id: entry.requestId ?? null,
            key_id: entry.keyId ?? null,
            model: entry.model ?? null,
            prompt_tokens: entry.promptTokens ?? null,
            completion_tokens: entry.completionTokens ?? null,
            note: entry.note ?? null,
            created_at: now,
          });
        }
        if (entry.usage) {
          addUsage(usage, {
            accountId,
            ...entry.usage,
            requests: 1,
            promptTokens: entry.promptTokens ?? 0,
            completionTokens: entry.completionTokens ?? 0,
            creditsNano: amount < 0n ? -amount : 0n,
          });
        }
        if (entry.keyId && amount < 0n && entry.kind === 'debit') {
          keySpend.set(entry.keyId, (keySpend.get(entry.keyId) ?? 0n) - amount);
        }
      }
      const version = big(current.version) + 1n;
      await trx.updateTable('accounts').set({ balance_nano: balance, version }).where('id', '=', accountId).execute();
      balances.set(accountId, { balanceNano: balance, version });
    }

    await insertLedger(trx, rows);
    for (const delta of batch.usage ?? []) addUsage(usage, delta);
    await upsertUsage(trx, [...usage.values()]);
    for (const [keyId, spent] of keySpend) {
      await trx.updateTable('api_keys').set((eb) => ({ spent_nano: eb('spent_nano', '+', spent) })).where('id', '=', keyId).execute();
    }
    const lastUsed = new Map<string, number>();
    for (const { keyId, at } of batch.keysUsed ?? []) lastUsed.set(keyId, Math.max(at, lastUsed.get(keyId) ?? 0));
    for (const [keyId, at] of lastUsed) {
      await trx.updateTable('api_keys').set({ last_used_at: at }).where('id', '=', keyId).execute();
    }
    if (batch.invoices?.length) {
      await trx
        .insertInto('invoices')
        .values(batch.invoices.map((i) => ({ id: newId('inv'), account_id: i.accountId, month: i.month, kind: i.kind, amount_nano: i.amountNano, processor: i.processor, reference: i.reference, created_at: now })))
        .execute();
    }
    return { applied, balancesAfter, balances };
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

function addUsage(map: Map<string, UsageDelta>, delta: UsageDelta): void {
  const id = `${delta.accountId}\u0000${delta.day}\u0000${delta.environment}\u0000${delta.model}`;
  const current = map.get(id);
  if (!current) {
    map.set(id, { ...delta });
    return;
  }
  current.requests += delta.requests;
  current.promptTokens += delta.promptTokens;
  current.completionTokens += delta.completionTokens;
  current.creditsNano += delta.creditsNano;
}

async function insertLedger(
  trx: Transaction<Database>,
  rows: Array<{
    id: string;
    account_id: string;
    kind: string;
    amount_nano: bigint;
    balance_after_nano: bigint;
    request_id: string | null;
    key_id: string | null;
    model: string | null;
    prompt_tokens: number | null;
    completion_tokens: number | null;
    note: string | null;
    created_at: number;
  }>,
): Promise<void> {
  // Chunked to stay under SQLite's bound-parameter limit.
  for (let i = 0; i < rows.length; i += 500) await trx.insertInto('ledger').values(rows.slice(i, i + 500)).execute();
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
