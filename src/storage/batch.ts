/**
 * The arithmetic of a write batch, apart from any database: given the accounts' current balances, what each
 * entry really moves (debits clamped at the balance), the rows to write and the balances after.
 * Both the PostgreSQL and the SQLite writers apply the same plan.
 */
import type { Insertable } from 'kysely';
import { auditRowOf, type AuditEntry } from './audit.js';
import type { AuditLogTable } from './schema.js';
import type { LedgerKind, UsageTotals } from './records.js';
import { newId } from './values.js';
import type { NewDelivery } from './webhooks.js';

export interface UsageSlot {
  day: string;
  environment: string;
  model: string;
  /** The key that made the request: also counted in that key's daily usage (`usage_daily_keys`). */
  keyId?: string;
}

export interface LedgerEntryInput {
  accountId: string;
  kind: LedgerKind;
  /**
   * Signed nano-USD. A debit is clamped at what the balance has (spending never takes it below zero); only a
   * payment taken back (`refund`, `dispute`) moves in full, and may leave the balance below zero.
   */
  amountNano: bigint;
  requestId?: string;
  keyId?: string;
  model?: string;
  promptTokens?: number;
  completionTokens?: number;
  note?: string;
  /** JSON text of the debit's tokens per kind and the prices applied, built by the caller; stored as given. */
  billing?: string;
  /** A debit's endpoint (`/v1/chat/completions`), the id its answer had, and its detail as JSON text. */
  endpoint?: string;
  answerId?: string;
  detail?: string;
  /** Counts this entry's request and tokens (and the debited amount) in the daily usage. */
  usage?: UsageSlot;
  /** The events this entry causes, written to the outbox in its transaction. */
  events?: EntryEvents;
}

/**
 * Builds the outbox rows of an entry's events from what the entry really moved, so they agree with the ledger
 * (the debit an `llm.completion` reports, the balance a low-balance crossing is judged on). Called once the batch
 * is planned, before anything is written; never for an entry a retried batch finds already written.
 */
export interface EntryEvents {
  /** The rows need the balance after the entry: PostgreSQL then reads the balances under lock (two round trips). */
  needsBalance: boolean;
  rows(applied: bigint, balanceAfter: bigint): NewDelivery[];
}

export interface UsageDelta extends UsageSlot, UsageTotals {
  accountId: string;
}

/** One key's usage on one day (`usage_daily_keys`). */
export interface KeyUsageDelta extends UsageTotals {
  keyId: string;
  day: string;
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
  /** Outbox rows known before the plan (events of usage without a ledger entry); ids are kept on a retry. */
  deliveries?: NewDelivery[];
  /**
   * Some of these entries were in a batch that failed: the writer then looks for their debits in the ledger
   * (a commit can succeed while its writer sees an error) and writes none twice. Writers look only then.
   */
  retried?: boolean;
  /** The entries credit a purchase: they apply only if its processor event is new and the purchase still pending. */
  purchasePaid?: PurchasePaid;
  /** The entries credit a card recharge: they apply only if it is not credited yet (then it becomes succeeded). */
  rechargePaid?: RechargePaid;
  /** A payment taken back: the writer derives the batch's one entry from what was taken back before (`planReversal`). */
  paymentReversed?: PaymentReversed;
  /**
   * An auto-recharge of one dip below a threshold: the batch applies only if the account's balance, read under the
   * lock the batch writes with, is still below `thresholdNano`. Of the replicas that saw the same dip, the first
   * recharges; the others find the balance back up and write nothing.
   */
  whileBelow?: { accountId: string; thresholdNano: bigint };
  /**
   * Audit entries of the change the batch makes (a payment, a top-up): written only when its entries apply (with
   * `paymentReversed`, when the reversal changes anything).
   */
  audit?: AuditEntry[];
}

/**
 * A processor's word that part of a payment went back to the payer (`refund`) or is disputed (`dispute`):
 * `totalNano` is how much of the payment this reversal asks back now (Stripe reports a charge's refunds in a running
 * total). Each reversal's row keeps what it asks (at most the payment); an open reversal only grows, a final one
 * (a closed dispute: lost keeps the amount, won gives it back) sets it and nothing changes it after. The ledger
 * holds the payment's rows' sum, capped at `paymentNano`, taken back: so however often, in whatever order and on
 * whatever replica deliveries come, and however many refunds and disputes one payment has, the ledger never takes
 * back more than the payment credited.
 */
export interface PaymentReversed {
  id: string;
  accountId: string;
  processor: string;
  kind: 'refund' | 'dispute';
  paymentReference: string;
  /** What the payment credited: the most its refunds and disputes take back together. */
  paymentNano: bigint;
  totalNano: bigint;
  final: boolean;
  note: string;
  at: number;
}

/** What a payment reversal's row holds: the amount it asks back, and whether it can still change. */
export interface ReversalState {
  amountNano: bigint;
  final: boolean;
}

/**
 * The entry a reversal moves given its row (`stored`) and the sum of the payment's other reversal rows (`othersNano`),
 * read under the lock that serializes the payment's reversals; and the row's new state. Undefined when nothing
 * changes (a repeated or stale delivery, or a reversal already final).
 */
export function planReversal(
  reversal: PaymentReversed,
  stored: ReversalState | undefined,
  othersNano: bigint,
): { entry: LedgerEntryInput; state: ReversalState } | undefined {
  if (stored?.final) return undefined;
  const before = stored?.amountNano ?? 0n;
  const asked = atMost(reversal.totalNano, reversal.paymentNano);
  const total = reversal.final || asked > before ? asked : before;
  if (total === before && !reversal.final) return undefined;
  const takenBefore = atMost(othersNano + before, reversal.paymentNano);
  const takenAfter = atMost(othersNano + total, reversal.paymentNano);
  const entry: LedgerEntryInput = {
    accountId: reversal.accountId,
    kind: reversal.kind,
    amountNano: takenBefore - takenAfter,
    note: reversal.note,
  };
  return { entry, state: { amountNano: total, final: reversal.final } };
}

const atMost = (value: bigint, bound: bigint): bigint => (value < bound ? value : bound);

/** Whether a `whileBelow` batch applies, given the balances read under its lock (any other batch applies). */
export function stillBelow(batch: WriteBatch, current: Map<string, AccountBalance>): boolean {
  if (!batch.whileBelow) return true;
  const balance = current.get(batch.whileBelow.accountId);
  return balance !== undefined && balance.balanceNano < batch.whileBelow.thresholdNano;
}

/**
 * A payment processor's word that a card recharge succeeded (its synchronous answer or its event). In the batch's
 * transaction the recharge goes from pending or failed to succeeded; if it already succeeded, the batch moves no money.
 */
export interface RechargePaid {
  rechargeId: string;
  paymentIntentId: string;
  at: number;
}

/**
 * A payment processor's word that a purchase is paid. In the batch's transaction the event is recorded and the
 * purchase goes from pending to paid; if the event was seen before or the purchase is no longer pending, the batch
 * moves no money. Whatever the order and number of deliveries, a purchase is credited once.
 */
export interface PurchasePaid {
  purchaseId: string;
  processor: string;
  eventId: string;
  eventType: string;
  paymentIntentId: string | null;
  at: number;
}

export interface NewAccount {
  id: string;
  email: string;
  plan: string;
  settings: string;
  grantNano: bigint;
  /** The grant's audit entries (`credits.grant`), written with it; none without a grant. */
  audit?: AuditEntry[];
}

/** The batch that credits a new account's sign-up grant (`grantNano` > 0), with its audit entries. */
export function grantBatch(account: NewAccount): WriteBatch {
  return {
    entries: [{ accountId: account.id, kind: 'grant', amountNano: account.grantNano, note: 'sign-up credit' }],
    ...(account.audit ? { audit: account.audit } : {}),
  };
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
  /** With `purchasePaid`: whether its condition held (false: the batch moved nothing). */
  purchasePaid?: boolean;
  /** With `rechargePaid`: whether its condition held (false: the batch moved nothing). */
  rechargePaid?: boolean;
  /** With `paymentReversed`: what the ledger took back (negative) or gave back; 0n when nothing moved. */
  reversedNano?: bigint;
  /** With `whileBelow`: whether the balance was still below the threshold (false: the batch moved nothing). */
  whileBelow?: boolean;
}

export interface LedgerRow {
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
  billing: string | null;
  endpoint: string | null;
  answer_id: string | null;
  detail: string | null;
}

export interface InvoiceRow {
  id: string;
  account_id: string;
  month: string;
  kind: string;
  amount_nano: bigint;
  processor: string;
  reference: string;
  created_at: number;
}

export interface BatchPlan {
  result: CommitResult;
  ledger: LedgerRow[];
  usage: UsageDelta[];
  keyUsage: KeyUsageDelta[];
  keySpend: Map<string, bigint>;
  keysUsed: Map<string, number>;
  invoices: InvoiceRow[];
  /** The batch's own outbox rows and those its entries' events built. */
  deliveries: NewDelivery[];
  audit: Array<Insertable<AuditLogTable>>;
}

/** Whether an entry's events need the balance after it (`EntryEvents.needsBalance`). */
export function needsBalances(batch: WriteBatch): boolean {
  return batch.entries.some((e) => e.events?.needsBalance === true);
}

/**
 * The batch in journal form: its entries' event builders replaced by the rows they built (`plan.deliveries`),
 * so a batch read back from the journal writes the very rows its confirmation promised.
 */
export function withBuiltDeliveries(batch: WriteBatch, plan: BatchPlan): WriteBatch {
  if (plan.deliveries.length === 0 && !batch.entries.some((e) => e.events)) return batch;
  return { ...batch, entries: batch.entries.map(({ events: _built, ...entry }) => entry), deliveries: plan.deliveries };
}

/** Accounts the batch touches, in a fixed order (so concurrent writers lock them in the same order). */
export function accountsOf(batch: WriteBatch): string[] {
  const ids = batch.entries.map((e) => e.accountId);
  if (batch.paymentReversed) ids.push(batch.paymentReversed.accountId);
  if (batch.whileBelow) ids.push(batch.whileBelow.accountId);
  return [...new Set(ids)].sort();
}

/**
 * `written`: debits already in the ledger by request id. A retried batch whose first attempt committed without
 * the writer hearing of it reports those debits applied and writes nothing for them again.
 */
export function planBatch(
  batch: WriteBatch,
  current: Map<string, AccountBalance>,
  written = new Map<string, bigint>(),
  now = Date.now(),
): BatchPlan {
  const applied: bigint[] = new Array<bigint>(batch.entries.length).fill(0n);
  const balancesAfter: bigint[] = new Array<bigint>(batch.entries.length).fill(0n);
  const running = new Map<string, bigint>();
  const ledger: LedgerRow[] = [];
  const usage = new Map<string, UsageDelta>();
  const keyUsage = new Map<string, KeyUsageDelta>();
  const keySpend = new Map<string, bigint>();
  const deliveries: NewDelivery[] = batch.deliveries ? [...batch.deliveries] : [];

  batch.entries.forEach((entry, index) => {
    const start = current.get(entry.accountId);
    if (!start) throw new Error(`ledger entry for unknown account ${entry.accountId}`);
    const balance = running.get(entry.accountId) ?? start.balanceNano;
    const already = entry.kind === 'debit' && entry.requestId !== undefined ? written.get(entry.requestId) : undefined;
    if (already !== undefined) {
      running.set(entry.accountId, balance);
      applied[index] = already;
      balancesAfter[index] = balance;
      return;
    }
    const free = balance > 0n ? balance : 0n;
    const takenBack = entry.kind === 'refund' || entry.kind === 'dispute';
    const amount = entry.amountNano < 0n && !takenBack && -entry.amountNano > free ? -free : entry.amountNano;
    const after = balance + amount;
    running.set(entry.accountId, after);
    applied[index] = amount;
    balancesAfter[index] = after;
    if (amount !== 0n) {
      ledger.push({
        id: newId('led'),
        account_id: entry.accountId,
        kind: entry.kind,
        amount_nano: amount,
        balance_after_nano: after,
        request_id: entry.requestId ?? null,
        key_id: entry.keyId ?? null,
        model: entry.model ?? null,
        prompt_tokens: entry.promptTokens ?? null,
        completion_tokens: entry.completionTokens ?? null,
        note: entry.note ?? null,
        created_at: now,
        billing: entry.billing ?? null,
        endpoint: entry.endpoint ?? null,
        answer_id: entry.answerId ?? null,
        detail: entry.detail ?? null,
      });
    }
    if (entry.usage) {
      const delta = {
        accountId: entry.accountId,
        ...entry.usage,
        requests: 1,
        promptTokens: entry.promptTokens ?? 0,
        completionTokens: entry.completionTokens ?? 0,
        creditsNano: amount < 0n ? -amount : 0n,
      };
      addUsage(usage, delta);
      addKeyUsage(keyUsage, delta);
    }
    if (entry.keyId && amount < 0n && entry.kind === 'debit')
      keySpend.set(entry.keyId, (keySpend.get(entry.keyId) ?? 0n) - amount);
    if (entry.events) deliveries.push(...entry.events.rows(amount, after));
  });
  for (const delta of batch.usage ?? []) {
    addUsage(usage, delta);
    addKeyUsage(keyUsage, delta);
  }

  const balances = new Map<string, AccountBalance>();
  for (const [accountId, balanceNano] of running)
    balances.set(accountId, { balanceNano, version: current.get(accountId)!.version + 1n });
  const keysUsed = new Map<string, number>();
  for (const { keyId, at } of batch.keysUsed ?? []) keysUsed.set(keyId, Math.max(at, keysUsed.get(keyId) ?? 0));
  const invoices = (batch.invoices ?? []).map((i) => ({
    id: newId('inv'),
    account_id: i.accountId,
    month: i.month,
    kind: i.kind,
    amount_nano: i.amountNano,
    processor: i.processor,
    reference: i.reference,
    created_at: now,
  }));
  return {
    result: { applied, balancesAfter, balances },
    ledger,
    usage: [...usage.values()],
    keyUsage: [...keyUsage.values()],
    keySpend,
    keysUsed,
    invoices,
    deliveries,
    audit: (batch.audit ?? []).map((entry) => auditRowOf(entry, now)),
  };
}

/** Adds `delta` to its row of `map` (one row per account, day, environment and model). */
export function addUsage(map: Map<string, UsageDelta>, delta: UsageDelta): void {
  const id = `${delta.accountId}\u0000${delta.day}\u0000${delta.environment}\u0000${delta.model}`;
  const current = map.get(id);
  if (!current) {
    const { keyId: _counted, ...row } = delta;
    map.set(id, row);
    return;
  }
  addTotals(current, delta);
}

/** Adds a usage delta made by a key to that key's row of `map` (one row per key and day); others add nothing. */
export function addKeyUsage(map: Map<string, KeyUsageDelta>, delta: UsageDelta | KeyUsageDelta): void {
  if (!delta.keyId) return;
  const id = `${delta.keyId}\u0000${delta.day}`;
  const current = map.get(id);
  if (!current) {
    const { keyId, day, accountId, requests, promptTokens, completionTokens, creditsNano } = delta;
    map.set(id, { keyId, day, accountId, requests, promptTokens, completionTokens, creditsNano });
    return;
  }
  addTotals(current, delta);
}

function addTotals(into: UsageTotals, delta: UsageTotals): void {
  into.requests += delta.requests;
  into.promptTokens += delta.promptTokens;
  into.completionTokens += delta.completionTokens;
  into.creditsNano += delta.creditsNano;
}

/** Key usage rows in the global lock order: after the accounts' usage rows, before the keys. */
export function byKeyUsageRow(a: KeyUsageDelta, b: KeyUsageDelta): number {
  const left = `${a.keyId}\u0000${a.day}`;
  const right = `${b.keyId}\u0000${b.day}`;
  return left < right ? -1 : left > right ? 1 : 0;
}
