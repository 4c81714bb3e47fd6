/**
 * PostgreSQL's money writer: a batch in one round trip, or two. Under load every round trip waits for a turn of a
 * busy event loop, so a nine-statement transaction held the account's row lock for nine turns and capped
 * throughput (docs/adr/0037-money-writers-outside-kysely.md). The arithmetic is `planBatch`, shared with SQLite.
 *
 * - One round trip for a batch that takes no balance below zero: one prepared statement (`COMMIT_IN_ONE_TRIP`,
 *   planned once per connection) moves each balance by the batch's sum, its rows passed in arrays, in its own
 *   implicit transaction. It reads no balance first, so replicas charging the same account never make each
 *   other's batches take the slower way (docs/adr/0037-money-writers-outside-kysely.md).
 * - Two round trips otherwise (a debit to clamp at the balance, retried batches, which look for debits already
 *   written, batches with invoices, and batches whose events need the balance after an entry: low-balance
 *   crossings): lock and read the accounts, then write and COMMIT. Multi-statement
 *   queries use PostgreSQL's simple protocol, which takes no parameters: every value is rendered by `literal`,
 *   strings through pg's `escapeLiteral`, so the SQL is built from typed values only.
 *
 * Either way a ledger id takes the database's time once the batch holds its locks (pg-ledger-ids.ts). Row locks
 * are taken in one global order (accounts, then usage rows, keys' usage rows, keys, each sorted), so two writers
 * (replicas, the CLI) can wait for each other but never deadlock.
 */
import type pg from 'pg';
import { DELIVERY_COLUMNS, deliveryValues } from './outbox-rows.js';
import {
  accountsOf,
  grantBatch,
  needsBalances,
  byKeyUsageRow,
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
  type ReversalState,
  type WriteBatch,
} from './batch.js';
import { NOW_MICROSECONDS_SQL, ledgerIdSuffix, nextBatchTag, pgLedgerId } from './pg-ledger-ids.js';
import { AUDIT_COLUMNS, auditValues } from './audit.js';
import { COMMIT_IN_ONE_TRIP, byUsageRow, planOneTrip } from './pg-one-trip-batch.js';
import { errorCode } from './unavailable.js';
import { big } from './values.js';

type Literal = string | number | bigint | null | undefined;
type Lit = (value: Literal) => string;

/** SQLSTATE of the division by zero that marks a batch that would take a balance below zero (pg-one-trip-batch.ts). */
const WOULD_CLAMP = '22012';

export class PgWriter {
  constructor(private readonly pool: pg.Pool) {}

  commit(batch: WriteBatch): Promise<CommitResult> {
    return this.transaction(batch);
  }

  /** The account and its sign-up grant, atomically. */
  async createAccount(account: NewAccount): Promise<void> {
    const grant: WriteBatch = account.grantNano > 0n ? grantBatch(account) : { entries: [] };
    await this.transaction(grant, (lit) => [
      `INSERT INTO accounts (id, email, plan, balance_nano, version, settings, created_at) VALUES (${[account.id, account.email, account.plan, 0, 0, account.settings, Date.now()].map(lit).join(', ')})`,
    ]);
  }

  private async transaction(batch: WriteBatch, first?: (lit: Lit) => string[]): Promise<CommitResult> {
    const client = await this.pool.connect();
    try {
      const lit: Lit = (value) => literal(client, value);
      const accounts = accountsOf(batch);
      const result =
        (!first && (await this.commitInOneTrip(client, batch, accounts))) ||
        (await this.commitLocked(client, lit, batch, accounts, first));
      client.release();
      return result;
    } catch (error) {
      // Whatever state the connection is in, it is not reused: the pool opens a fresh one.
      client.release(true);
      throw error;
    }
  }

  /** One round trip, or undefined (rolled back) when a debit would have to be clamped at the balance. */
  private async commitInOneTrip(
    client: pg.PoolClient,
    batch: WriteBatch,
    accounts: string[],
  ): Promise<CommitResult | undefined> {
    if (
      batch.retried ||
      accounts.length === 0 ||
      batch.invoices?.length ||
      batch.purchasePaid ||
      batch.rechargePaid ||
      batch.paymentReversed ||
      batch.whileBelow ||
      batch.audit?.length ||
      needsBalances(batch)
    )
      return undefined;
    const plan = planOneTrip(batch, accounts);
    let answer: pg.QueryResult<{ ids: string[]; balances: Array<string | bigint>; versions: Array<string | bigint> }>;
    try {
      answer = await client.query({
        name: COMMIT_IN_ONE_TRIP.name,
        text: COMMIT_IN_ONE_TRIP.text,
        values: plan.values,
      });
    } catch (error) {
      if (errorCode(error) !== WOULD_CLAMP) throw error;
      return undefined;
    }
    const row = answer.rows[0]!;
    const moved = new Map<string, AccountBalance>();
    row.ids.forEach((id, i) => moved.set(id, { balanceNano: big(row.balances[i]), version: big(row.versions[i]) }));
    return plan.result(moved);
  }

  /** Two round trips: lock and read the accounts (and debits already written), then write and COMMIT. */
  private async commitLocked(
    client: pg.PoolClient,
    lit: Lit,
    batch: WriteBatch,
    accounts: string[],
    first?: (lit: Lit) => string[],
  ): Promise<CommitResult> {
    const list = (values: Literal[]) => values.map(lit).join(', ');
    const requestIds = batch.retried
      ? batch.entries.flatMap((e) => (e.kind === 'debit' && e.requestId ? [e.requestId] : []))
      : [];

    const reads = ['BEGIN', ...(first?.(lit) ?? [])];
    // The purchase's row lock comes before the accounts' (nothing locks them the other way round).
    if (batch.purchasePaid) reads.push(purchasePaidSql(batch.purchasePaid, lit));
    if (batch.rechargePaid) reads.push(rechargePaidSql(batch.rechargePaid, lit));
    const firstAnswer = reads.length;
    if (accounts.length)
      reads.push(
        `SELECT id, balance_nano, version FROM accounts WHERE id IN (${list(accounts)}) ORDER BY id FOR UPDATE`,
      );
    if (batch.paymentReversed) reads.push(...reversalReadSql(batch.paymentReversed, lit));
    if (requestIds.length)
      reads.push(
        `SELECT request_id, amount_nano FROM ledger WHERE kind = 'debit' AND request_id IN (${list(requestIds)})`,
      );
    // After the row locks: ledger ids sort in the order commits take effect (pg-ledger-ids.ts).
    reads.push(`SELECT ${NOW_MICROSECONDS_SQL} AS us`);
    const answers = asArray(await client.query(reads.join('; ')));
    const current = new Map<string, AccountBalance>();
    const written = new Map<string, bigint>();
    let next = firstAnswer;
    if (accounts.length)
      for (const row of answers[next++]!.rows)
        current.set(textOf(row, 'id'), { balanceNano: int8Of(row, 'balance_nano'), version: int8Of(row, 'version') });
    const reversalRow = batch.paymentReversed && answers[next++]!.rows[0];
    const others = batch.paymentReversed ? int8Of(answers[next++]!.rows[0], 'others') : 0n;
    if (requestIds.length)
      for (const row of answers[next++]!.rows) written.set(textOf(row, 'request_id'), int8Of(row, 'amount_nano'));
    const stamp = int8Of(answers[next]!.rows[0], 'us');

    const held =
      batch.purchasePaid || batch.rechargePaid
        ? answers[firstAnswer - 1]!.rows.length === 1
        : stillBelow(batch, current);
    const reversal = batch.paymentReversed && reversalOf(batch.paymentReversed, reversalRow || undefined, others);
    const planned = batch.paymentReversed
      ? reversal
        ? { entries: [reversal.entry], ...(batch.audit ? { audit: batch.audit } : {}) }
        : { entries: [] }
      : held
        ? batch
        : { entries: [] };
    const plan = planBatch(planned, current, written);
    if (batch.purchasePaid) plan.result.purchasePaid = held;
    if (batch.rechargePaid) plan.result.rechargePaid = held;
    if (batch.whileBelow) plan.result.whileBelow = held;
    if (batch.paymentReversed) plan.result.reversedNano = plan.result.applied[0] ?? 0n;
    const batchTag = nextBatchTag();
    plan.ledger.forEach((row, i) => (row.id = pgLedgerId(stamp, ledgerIdSuffix(batchTag, i))));
    const writes: string[] = [];
    for (const [id, balance] of plan.result.balances) {
      writes.push(
        `UPDATE accounts SET balance_nano = ${lit(balance.balanceNano)}, version = ${lit(balance.version)} WHERE id = ${lit(id)}`,
      );
    }
    if (batch.paymentReversed && reversal) writes.push(reversalWriteSql(batch.paymentReversed, reversal.state, lit));
    await client.query(writes.concat(writesOf(plan, lit), 'COMMIT').join('; '));
    return plan.result;
  }
}

/**
 * Records the processor's event and moves the purchase from pending to paid, in one statement: a row comes back
 * only if both happened. A second delivery of the event waits on the first's uncommitted key, then finds it.
 */
function purchasePaidSql(paid: PurchasePaid, lit: Lit): string {
  return (
    `WITH event AS (INSERT INTO payment_events (id, processor, type, received_at) VALUES (${[paid.eventId, paid.processor, paid.eventType, paid.at].map(lit).join(', ')}) ` +
    'ON CONFLICT (id) DO NOTHING RETURNING id) ' +
    `UPDATE credit_purchases SET status = 'paid', paid_at = ${lit(paid.at)}, payment_intent_id = coalesce(${lit(paid.paymentIntentId)}, payment_intent_id) ` +
    `WHERE id = ${lit(paid.purchaseId)} AND status = 'pending' AND EXISTS (SELECT 1 FROM event) RETURNING id`
  );
}

/** Moves the recharge to succeeded unless it already is: a row comes back only if this batch did. */
function rechargePaidSql(paid: RechargePaid, lit: Lit): string {
  return (
    `UPDATE card_recharges SET status = 'succeeded', settled_at = ${lit(paid.at)}, payment_intent_id = ${lit(paid.paymentIntentId)} ` +
    `WHERE id = ${lit(paid.rechargeId)} AND status <> 'succeeded' RETURNING id`
  );
}

/**
 * The reversal's row and what the payment's other reversals ask back, read after the account's row lock: every
 * reversal of a payment (all of one account) takes that lock first, so they apply one after another, each reading
 * what the ones before it committed (every statement reads afresh under READ COMMITTED).
 */
function reversalReadSql(reversal: PaymentReversed, lit: Lit): string[] {
  return [
    `SELECT amount_nano, final FROM payment_reversals WHERE id = ${lit(reversal.id)}`,
    'SELECT coalesce(sum(amount_nano), 0) AS others FROM payment_reversals ' +
      `WHERE processor = ${lit(reversal.processor)} AND payment_reference = ${lit(reversal.paymentReference)} AND id <> ${lit(reversal.id)}`,
  ];
}

function reversalOf(reversal: PaymentReversed, row: Row | undefined, others: bigint): ReturnType<typeof planReversal> {
  return planReversal(
    reversal,
    row && { amountNano: int8Of(row, 'amount_nano'), final: Number(row.final) === 1 },
    others,
  );
}

function reversalWriteSql(reversal: PaymentReversed, state: ReversalState, lit: Lit): string {
  const values = [
    reversal.id,
    reversal.accountId,
    reversal.processor,
    reversal.kind,
    reversal.paymentReference,
    state.amountNano,
    state.final ? 1 : 0,
    reversal.at,
  ]
    .map(lit)
    .join(', ');
  return (
    `INSERT INTO payment_reversals (id, account_id, processor, kind, payment_reference, amount_nano, final, updated_at) VALUES (${values}) ` +
    'ON CONFLICT (id) DO UPDATE SET amount_nano = excluded.amount_nano, final = excluded.final, updated_at = excluded.updated_at'
  );
}

/** The batch's rows, after its balance updates: ledger, usage, keys and invoices, in the global lock order. */
function writesOf(plan: BatchPlan, lit: Lit): string[] {
  const list = (values: Literal[]) => values.map(lit).join(', ');
  const writes: string[] = [];
  if (plan.ledger.length) {
    const rows = plan.ledger.map(
      (r) =>
        `(${list([r.id, r.account_id, r.kind, r.amount_nano, r.balance_after_nano, r.request_id, r.key_id, r.model, r.prompt_tokens, r.completion_tokens, r.note, r.created_at, r.billing, r.endpoint, r.answer_id, r.detail])})`,
    );
    writes.push(
      `INSERT INTO ledger (id, account_id, kind, amount_nano, balance_after_nano, request_id, key_id, model, prompt_tokens, completion_tokens, note, created_at, billing, endpoint, answer_id, detail) VALUES ${rows.join(', ')}`,
    );
  }
  if (plan.usage.length) {
    const rows = [...plan.usage]
      .sort(byUsageRow)
      .map(
        (u) =>
          `(${list([u.accountId, u.day, u.environment, u.model, u.requests, u.promptTokens, u.completionTokens, u.creditsNano])})`,
      );
    writes.push(
      `INSERT INTO usage_daily (account_id, day, environment, model, requests, prompt_tokens, completion_tokens, credits_nano) VALUES ${rows.join(', ')} ` +
        'ON CONFLICT (account_id, day, environment, model) DO UPDATE SET requests = usage_daily.requests + excluded.requests, ' +
        'prompt_tokens = usage_daily.prompt_tokens + excluded.prompt_tokens, completion_tokens = usage_daily.completion_tokens + excluded.completion_tokens, ' +
        'credits_nano = usage_daily.credits_nano + excluded.credits_nano',
    );
  }
  if (plan.keyUsage.length) {
    const rows = [...plan.keyUsage]
      .sort(byKeyUsageRow)
      .map(
        (k) =>
          `(${list([k.keyId, k.day, k.accountId, k.requests, k.promptTokens, k.completionTokens, k.creditsNano])})`,
      );
    writes.push(
      `INSERT INTO usage_daily_keys (key_id, day, account_id, requests, prompt_tokens, completion_tokens, credits_nano) VALUES ${rows.join(', ')} ` +
        'ON CONFLICT (key_id, day) DO UPDATE SET requests = usage_daily_keys.requests + excluded.requests, ' +
        'prompt_tokens = usage_daily_keys.prompt_tokens + excluded.prompt_tokens, completion_tokens = usage_daily_keys.completion_tokens + excluded.completion_tokens, ' +
        'credits_nano = usage_daily_keys.credits_nano + excluded.credits_nano',
    );
  }
  for (const keyId of [...new Set([...plan.keySpend.keys(), ...plan.keysUsed.keys()])].sort()) {
    const spent = plan.keySpend.get(keyId);
    const at = plan.keysUsed.get(keyId);
    const changes = [
      ...(spent === undefined ? [] : [`spent_nano = spent_nano + ${lit(spent)}`]),
      ...(at === undefined ? [] : [`last_used_at = ${lit(at)}`]),
    ];
    writes.push(`UPDATE api_keys SET ${changes.join(', ')} WHERE id = ${lit(keyId)}`);
  }
  if (plan.invoices.length) {
    const rows = plan.invoices.map(
      (i) => `(${list([i.id, i.account_id, i.month, i.kind, i.amount_nano, i.processor, i.reference, i.created_at])})`,
    );
    writes.push(
      `INSERT INTO invoices (id, account_id, month, kind, amount_nano, processor, reference, created_at) VALUES ${rows.join(', ')}`,
    );
  }
  if (plan.deliveries.length) {
    const rows = plan.deliveries.map((d) => `(${list(deliveryValues(d))})`);
    writes.push(
      `INSERT INTO webhook_deliveries (${DELIVERY_COLUMNS}) VALUES ${rows.join(', ')} ON CONFLICT (id) DO NOTHING`,
    );
  }
  if (plan.audit.length) {
    const rows = plan.audit.map((row) => `(${list(auditValues(row))})`);
    writes.push(`INSERT INTO audit_log (${AUDIT_COLUMNS}) VALUES ${rows.join(', ')}`);
  }
  return writes;
}

/** A value in SQL: integers in digits, strings quoted by pg. Anything else is a programming error. */
function literal(client: pg.PoolClient, value: Literal): string {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new Error(`not an integer for SQL: ${value}`);
    return String(value);
  }
  // pg's escapeLiteral builds its answer a character at a time, garbage on every request; for a string with no
  // quote or backslash its answer is the string in quotes, so only those strings go to it.
  return NEEDS_ESCAPING.test(value) ? client.escapeLiteral(value) : `'${value}'`;
}

const NEEDS_ESCAPING = /['\\]/;

/** A row of the batch's multi-statement read: its columns are read through `textOf` and `int8Of`. */
type Row = Record<string, unknown>;

function asArray(result: pg.QueryResult<Row> | pg.QueryResult<Row>[]): pg.QueryResult<Row>[] {
  return Array.isArray(result) ? result : [result];
}

function textOf(row: Row | undefined, column: string): string {
  const value = row?.[column];
  if (typeof value !== 'string') throw new Error(`PgWriter: no text in column ${column}`);
  return value;
}

/** An int8 column (a bigint from the pool's parser, or its text). */
function int8Of(row: Row | undefined, column: string): bigint {
  const value = row?.[column];
  if (typeof value !== 'bigint' && typeof value !== 'string' && typeof value !== 'number')
    throw new Error(`PgWriter: no integer in column ${column}`);
  return big(value);
}
