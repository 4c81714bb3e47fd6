/**
 * SQLite's write path for money: one synchronous better-sqlite3 transaction over cached prepared statements.
 * Kysely's SQLite driver prepares every statement anew and awaits between statements; on the per-request
 * settlement path that cost dominated the profile (docs/adr/0037-money-writers-outside-kysely.md).
 *
 * All multi-statement writes at run time on SQLite go through here: a synchronous transaction must never run
 * while a Kysely transaction is open on the same connection (better-sqlite3 would nest it in a savepoint).
 */
import { AUDIT_COLUMNS, auditValues } from './audit.js';
import type { Database as SqliteDatabase, Statement } from 'better-sqlite3';
import { DELIVERY_COLUMNS, deliveryValues } from './outbox-rows.js';
import {
  accountsOf,
  addKeyUsage,
  grantBatch,
  addUsage,
  planBatch,
  planReversal,
  stillBelow,
  type AccountBalance,
  type BatchPlan,
  type CommitResult,
  type NewAccount,
  type PaymentReversed,
  type PurchasePaid,
  type RechargePaid,
  type KeyUsageDelta,
  type UsageDelta,
  type WriteBatch,
} from './batch.js';

/** A batch and the time its rows are stamped with. */
export interface StampedBatch {
  batch: WriteBatch;
  at: number;
}

export class SqliteWriter {
  private readonly selectBalance: Statement<[string], { balance_nano: bigint; version: bigint }>;
  private readonly selectDebit: Statement<[string], { amount_nano: bigint }>;
  private readonly updateBalance: Statement<[bigint, bigint, string]>;
  private readonly insertAccount: Statement<[string, string, string, string, number]>;
  private readonly insertLedger: Statement<unknown[]>;
  private readonly upsertUsage: Statement<unknown[]>;
  private readonly upsertKeyUsage: Statement<unknown[]>;
  private readonly addKeySpend: Statement<[bigint, string]>;
  private readonly touchKey: Statement<[number, string]>;
  private readonly insertInvoice: Statement<unknown[]>;
  private readonly insertDelivery: Statement<unknown[]>;
  private readonly insertAudit: Statement<unknown[]>;
  private readonly insertPaymentEvent: Statement<[string, string, string, number]>;
  private readonly markPurchasePaid: Statement<[number, string | null, string]>;
  private readonly markRechargePaid: Statement<[number, string, string]>;
  private readonly selectReversal: Statement<[string], { amount_nano: bigint; final: number }>;
  private readonly sumOtherReversals: Statement<[string, string, string], { others: bigint }>;
  private readonly upsertReversal: Statement<unknown[]>;
  private readonly commitTransaction: (batch: WriteBatch) => CommitResult;
  private readonly selectMeta: Statement<[string], { value: string }>;
  private readonly upsertMeta: Statement<[string, string]>;
  private readonly journalTransaction: (batches: StampedBatch[], key: string, value: string) => void;
  private readonly createAccountTransaction: (account: NewAccount) => void;

  /** `afterCommit` runs after each committed transaction (the WAL checkpointer's cue). */
  constructor(
    sqlite: SqliteDatabase,
    private readonly afterCommit: () => void = () => {},
  ) {
    this.selectBalance = sqlite.prepare('SELECT balance_nano, version FROM accounts WHERE id = ?');
    this.selectDebit = sqlite.prepare("SELECT amount_nano FROM ledger WHERE request_id = ? AND kind = 'debit'");
    this.updateBalance = sqlite.prepare('UPDATE accounts SET balance_nano = ?, version = ? WHERE id = ?');
    this.insertAccount = sqlite.prepare(
      'INSERT INTO accounts (id, email, plan, balance_nano, version, settings, created_at) VALUES (?, ?, ?, 0, 0, ?, ?)',
    );
    this.insertLedger = sqlite.prepare(
      `INSERT INTO ledger (id, account_id, kind, amount_nano, balance_after_nano, request_id, key_id, model,
        prompt_tokens, completion_tokens, note, created_at, billing, endpoint, answer_id, detail)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.upsertUsage = sqlite.prepare(
      `INSERT INTO usage_daily (account_id, day, environment, model, requests, prompt_tokens, completion_tokens, credits_nano)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (account_id, day, environment, model) DO UPDATE SET
         requests = requests + excluded.requests,
         prompt_tokens = prompt_tokens + excluded.prompt_tokens,
         completion_tokens = completion_tokens + excluded.completion_tokens,
         credits_nano = credits_nano + excluded.credits_nano`,
    );
    this.upsertKeyUsage = sqlite.prepare(
      `INSERT INTO usage_daily_keys (key_id, day, account_id, requests, prompt_tokens, completion_tokens, credits_nano)
       VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (key_id, day) DO UPDATE SET
         requests = requests + excluded.requests,
         prompt_tokens = prompt_tokens + excluded.prompt_tokens,
         completion_tokens = completion_tokens + excluded.completion_tokens,
         credits_nano = credits_nano + excluded.credits_nano`,
    );
    this.addKeySpend = sqlite.prepare('UPDATE api_keys SET spent_nano = spent_nano + ? WHERE id = ?');
    this.touchKey = sqlite.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ?');
    this.insertInvoice = sqlite.prepare(
      'INSERT INTO invoices (id, account_id, month, kind, amount_nano, processor, reference, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    );
    this.insertDelivery = sqlite.prepare(
      `INSERT OR IGNORE INTO webhook_deliveries (${DELIVERY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.insertAudit = sqlite.prepare(
      `INSERT INTO audit_log (${AUDIT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.insertPaymentEvent = sqlite.prepare(
      'INSERT OR IGNORE INTO payment_events (id, processor, type, received_at) VALUES (?, ?, ?, ?)',
    );
    this.markPurchasePaid = sqlite.prepare(
      "UPDATE credit_purchases SET status = 'paid', paid_at = ?, payment_intent_id = coalesce(?, payment_intent_id) WHERE id = ? AND status = 'pending'",
    );
    this.markRechargePaid = sqlite.prepare(
      "UPDATE card_recharges SET status = 'succeeded', settled_at = ?, payment_intent_id = ? WHERE id = ? AND status <> 'succeeded'",
    );
    this.selectReversal = sqlite.prepare('SELECT amount_nano, final FROM payment_reversals WHERE id = ?');
    this.sumOtherReversals = sqlite.prepare(
      'SELECT coalesce(sum(amount_nano), 0) AS others FROM payment_reversals WHERE processor = ? AND payment_reference = ? AND id <> ?',
    );
    this.upsertReversal = sqlite.prepare(
      `INSERT INTO payment_reversals (id, account_id, processor, kind, payment_reference, amount_nano, final, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET amount_nano = excluded.amount_nano, final = excluded.final, updated_at = excluded.updated_at`,
    );
    this.commitTransaction = sqlite.transaction((batch: WriteBatch) => this.apply(batch));
    this.selectMeta = sqlite.prepare('SELECT value FROM meta WHERE key = ?');
    this.upsertMeta = sqlite.prepare(
      'INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
    );
    this.journalTransaction = sqlite.transaction((batches: StampedBatch[], key: string, value: string) => {
      this.applyAll(batches);
      this.upsertMeta.run(key, value);
    });
    this.createAccountTransaction = sqlite.transaction((account: NewAccount) => {
      this.insertAccount.run(account.id, account.email, account.plan, account.settings, Date.now());
      if (account.grantNano > 0n) this.apply(grantBatch(account));
    });
  }

  commit(batch: WriteBatch): CommitResult {
    const result = this.commitTransaction(batch);
    this.afterCommit();
    return result;
  }

  createAccount(account: NewAccount): void {
    this.createAccountTransaction(account);
    this.afterCommit();
  }

  /** Writes batches in order in one transaction (`SqliteJournal`'s), and sets `meta` `key` to `value` in it. */
  commitAll(batches: StampedBatch[], key: string, value: string): void {
    if (batches.length === 0) return;
    this.journalTransaction(batches, key, value);
    this.afterCommit();
  }

  /** A `meta` value, read on the writer's connection. */
  metaValue(key: string): string | undefined {
    return this.selectMeta.get(key)?.value;
  }

  /** An account's stored balance and version (undefined if there is no such account). */
  balance(accountId: string): AccountBalance | undefined {
    const row = this.selectBalance.get(accountId);
    return row && { balanceNano: BigInt(row.balance_nano), version: BigInt(row.version) };
  }

  private apply(batch: WriteBatch, now = Date.now()): CommitResult {
    return this.applyAll([{ batch, at: now }]);
  }

  /**
   * Batches in order, each planned on the balances the ones before it left, like `apply` one by one would; but
   * an account's balance, a usage row and a key are written once for them all. An account, its usage row and its
   * key are in nearly every batch, so this writes a few rows where one by one wrote a few per batch. Returns what
   * the last batch moved.
   */
  private applyAll(batches: StampedBatch[]): CommitResult {
    let result: CommitResult = { applied: [], balancesAfter: [], balances: new Map() };
    const balances = new Map<string, AccountBalance>();
    const usage = new Map<string, UsageDelta>();
    const keyUsage = new Map<string, KeyUsageDelta>();
    const keySpend = new Map<string, bigint>();
    const keysUsed = new Map<string, number>();
    for (const stamped of batches) {
      const { at } = stamped;
      const { paymentReversed, audit } = stamped.batch;
      const batch = paymentReversed ? this.reversalBatch(paymentReversed, audit) : stamped.batch;
      const current = new Map<string, AccountBalance>();
      for (const accountId of accountsOf(batch)) {
        const balance = balances.get(accountId) ?? this.balance(accountId);
        if (balance) current.set(accountId, balance);
      }
      const held = batch.purchasePaid
        ? this.purchaseBecamePaid(batch.purchasePaid)
        : batch.rechargePaid
          ? this.rechargeBecamePaid(batch.rechargePaid)
          : stillBelow(batch, current);
      // Ledger rows are written batch by batch: a retried batch looks for its debits among them.
      const plan = planBatch(held ? batch : { entries: [] }, current, this.writtenDebits(batch), at);
      if (batch.purchasePaid) plan.result.purchasePaid = held;
      if (batch.rechargePaid) plan.result.rechargePaid = held;
      if (batch.whileBelow) plan.result.whileBelow = held;
      if (stamped.batch.paymentReversed) plan.result.reversedNano = plan.result.applied[0] ?? 0n;
      this.insertRows(plan);
      for (const [accountId, balance] of plan.result.balances) balances.set(accountId, balance);
      for (const delta of plan.usage) addUsage(usage, delta);
      for (const delta of plan.keyUsage) addKeyUsage(keyUsage, delta);
      for (const [keyId, spent] of plan.keySpend) keySpend.set(keyId, (keySpend.get(keyId) ?? 0n) + spent);
      // The last batch's time wins, like writing the batches one by one.
      for (const [keyId, used] of plan.keysUsed) keysUsed.set(keyId, used);
      result = plan.result;
    }
    this.writeTotals(balances, [...usage.values()], [...keyUsage.values()], keySpend, keysUsed);
    return result;
  }

  /** Records the event; true only if it is new and moved the purchase from pending to paid. */
  private purchaseBecamePaid(paid: PurchasePaid): boolean {
    if (this.insertPaymentEvent.run(paid.eventId, paid.processor, paid.eventType, paid.at).changes === 0) return false;
    return this.markPurchasePaid.run(paid.at, paid.paymentIntentId, paid.purchaseId).changes === 1;
  }

  /**
   * The reversal's entry, judged on what its row and the payment's other reversals hold (in this transaction, which
   * SQLite serializes with every other writer), and the row's new state written; no entries (and no `audit`) if
   * nothing changes.
   */
  private reversalBatch(reversal: PaymentReversed, audit: WriteBatch['audit']): WriteBatch {
    const row = this.selectReversal.get(reversal.id);
    const others = this.sumOtherReversals.get(reversal.processor, reversal.paymentReference, reversal.id)!.others;
    const planned = planReversal(
      reversal,
      row && { amountNano: BigInt(row.amount_nano), final: Number(row.final) === 1 },
      BigInt(others),
    );
    if (!planned) return { entries: [] };
    const { amountNano, final } = planned.state;
    this.upsertReversal.run(
      reversal.id,
      reversal.accountId,
      reversal.processor,
      reversal.kind,
      reversal.paymentReference,
      amountNano,
      final ? 1 : 0,
      reversal.at,
    );
    return { entries: [planned.entry], ...(audit ? { audit } : {}) };
  }

  private rechargeBecamePaid(paid: RechargePaid): boolean {
    return this.markRechargePaid.run(paid.at, paid.paymentIntentId, paid.rechargeId).changes === 1;
  }

  private insertRows(plan: BatchPlan): void {
    for (const r of plan.ledger) {
      this.insertLedger.run(
        r.id,
        r.account_id,
        r.kind,
        r.amount_nano,
        r.balance_after_nano,
        r.request_id,
        r.key_id,
        r.model,
        r.prompt_tokens,
        r.completion_tokens,
        r.note,
        r.created_at,
        r.billing,
        r.endpoint,
        r.answer_id,
        r.detail,
      );
    }
    for (const i of plan.invoices)
      this.insertInvoice.run(
        i.id,
        i.account_id,
        i.month,
        i.kind,
        i.amount_nano,
        i.processor,
        i.reference,
        i.created_at,
      );
    for (const d of plan.deliveries) this.insertDelivery.run(...deliveryValues(d));
    for (const row of plan.audit) this.insertAudit.run(...auditValues(row));
  }

  private writeTotals(
    balances: Map<string, AccountBalance>,
    usage: UsageDelta[],
    keyUsage: KeyUsageDelta[],
    keySpend: Map<string, bigint>,
    keysUsed: Map<string, number>,
  ): void {
    for (const [accountId, balance] of balances)
      this.updateBalance.run(balance.balanceNano, balance.version, accountId);
    for (const u of usage) {
      this.upsertUsage.run(
        u.accountId,
        u.day,
        u.environment,
        u.model,
        u.requests,
        u.promptTokens,
        u.completionTokens,
        u.creditsNano,
      );
    }
    for (const k of keyUsage) {
      this.upsertKeyUsage.run(
        k.keyId,
        k.day,
        k.accountId,
        k.requests,
        k.promptTokens,
        k.completionTokens,
        k.creditsNano,
      );
    }
    for (const [keyId, spent] of keySpend) this.addKeySpend.run(spent, keyId);
    for (const [keyId, at] of keysUsed) this.touchKey.run(at, keyId);
  }

  /**
   * Debits of this batch's requests already in the ledger: a batch retried after its commit succeeded (the
   * committer saw an error after COMMIT) must not charge those requests again. PostgreSQL's path has the same rule.
   */
  private writtenDebits(batch: WriteBatch): Map<string, bigint> {
    const written = new Map<string, bigint>();
    if (!batch.retried) return written;
    for (const entry of batch.entries) {
      if (entry.kind !== 'debit' || entry.requestId === undefined) continue;
      const row = this.selectDebit.get(entry.requestId);
      if (row) written.set(entry.requestId, BigInt(row.amount_nano));
    }
    return written;
  }
}
