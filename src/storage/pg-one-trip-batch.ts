/**
 * The one-round-trip batch of PgWriter in a single prepared statement: planned once per connection, its rows
 * passed in one array literal per column, run in its own implicit transaction. It costs PostgreSQL less CPU and
 * the gateway a shorter round trip than the same batch sent as BEGIN, five statements and COMMIT in the simple
 * protocol, which PostgreSQL parses and plans anew every time (docs/adr/0037-money-writers-outside-kysely.md; the
 * figures in docs/performance.md).
 *
 * Balances move by the batch's sum (`balance_nano + delta`), not to a figure planned on a balance this process saw:
 * replicas charging the same account never make each other's plans stale, and each batch stays one round trip.
 * PostgreSQL's READ COMMITTED applies the sum to the newest row once the row lock is free. The rule that a debit is
 * clamped at the balance is kept by refusing, not clamping: `lowest_nano` is the lowest the batch takes the balance
 * to along the way (relative to where it starts); an account whose balance would dip below zero is not updated, and
 * the final division by zero (SQLSTATE 22012) aborts the whole statement. PgWriter then writes the batch the
 * two-round-trip way, which reads the balance under lock and clamps.
 *
 * Lock order: `locked` takes the accounts' row locks sorted by id before `moved` updates any of them (its count is
 * a one-time filter of the update); the usage rows, keys' usage rows and keys, written after it, belong to those
 * accounts. `delivery_rows` inserts the outbox rows of the batch's events (only events that need no balance: see
 * PgWriter). Each ledger row's balance after it is the account's new balance less what the batch's later entries
 * for that account move (`later_nano`); its id takes the database's time once `moved` holds the locks
 * (pg-ledger-ids.ts).
 */
import { DELIVERY_COLUMNS } from './outbox-rows.js';
import {
  byKeyUsageRow,
  planBatch,
  type AccountBalance,
  type BatchPlan,
  type CommitResult,
  type UsageDelta,
  type WriteBatch,
} from './batch.js';
import { NOW_MICROSECONDS_SQL, ledgerIdSql, ledgerIdSuffix, nextBatchTag } from './pg-ledger-ids.js';

export const COMMIT_IN_ONE_TRIP = {
  name: 'tollgate_commit_in_one_trip',
  text: `WITH locked AS (SELECT id FROM accounts WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE),
moved AS (
  UPDATE accounts a SET balance_nano = a.balance_nano + v.delta_nano, version = a.version + 1
  FROM unnest($1::text[], $2::int8[], $3::int8[]) AS v(id, delta_nano, lowest_nano)
  WHERE a.id = v.id AND a.balance_nano + v.lowest_nano >= 0
    AND (SELECT count(*) FROM locked) = cardinality($1::text[])
  RETURNING a.id, a.balance_nano, a.version),
stamp AS (SELECT ${NOW_MICROSECONDS_SQL} AS us FROM (SELECT 1 FROM moved LIMIT 1) AS locks_held),
ledger_rows AS (
  INSERT INTO ledger (id, account_id, kind, amount_nano, balance_after_nano, request_id, key_id, model, prompt_tokens, completion_tokens, note, created_at, billing, endpoint, answer_id, detail)
  SELECT ${ledgerIdSql('s.us', 'r.suffix')}, r.account_id, r.kind, r.amount_nano, m.balance_nano - r.later_nano, r.request_id, r.key_id, r.model, r.prompt_tokens, r.completion_tokens, r.note, r.created_at, r.billing, r.endpoint, r.answer_id, r.detail
  FROM unnest($4::text[], $5::text[], $6::text[], $7::int8[], $8::int8[], $9::text[], $10::text[], $11::text[], $12::int8[], $13::int8[], $14::text[], $15::int8[], $16::text[], $17::text[], $18::text[], $19::text[])
    AS r(suffix, account_id, kind, amount_nano, later_nano, request_id, key_id, model, prompt_tokens, completion_tokens, note, created_at, billing, endpoint, answer_id, detail)
  JOIN moved m ON m.id = r.account_id CROSS JOIN stamp s),
usage_rows AS (
  INSERT INTO usage_daily AS d (account_id, day, environment, model, requests, prompt_tokens, completion_tokens, credits_nano)
  SELECT * FROM unnest($20::text[], $21::text[], $22::text[], $23::text[], $24::int8[], $25::int8[], $26::int8[], $27::int8[])
  ON CONFLICT (account_id, day, environment, model) DO UPDATE SET requests = d.requests + excluded.requests,
    prompt_tokens = d.prompt_tokens + excluded.prompt_tokens, completion_tokens = d.completion_tokens + excluded.completion_tokens,
    credits_nano = d.credits_nano + excluded.credits_nano),
key_usage_rows AS (
  INSERT INTO usage_daily_keys AS d (key_id, day, account_id, requests, prompt_tokens, completion_tokens, credits_nano)
  SELECT * FROM unnest($28::text[], $29::text[], $30::text[], $31::int8[], $32::int8[], $33::int8[], $34::int8[])
  ON CONFLICT (key_id, day) DO UPDATE SET requests = d.requests + excluded.requests,
    prompt_tokens = d.prompt_tokens + excluded.prompt_tokens, completion_tokens = d.completion_tokens + excluded.completion_tokens,
    credits_nano = d.credits_nano + excluded.credits_nano),
key_rows AS (
  UPDATE api_keys k SET spent_nano = k.spent_nano + coalesce(v.spent_nano, 0), last_used_at = coalesce(v.last_used_at, k.last_used_at)
  FROM unnest($35::text[], $36::int8[], $37::int8[]) AS v(id, spent_nano, last_used_at)
  WHERE k.id = v.id),
delivery_rows AS (
  INSERT INTO webhook_deliveries (${DELIVERY_COLUMNS})
  SELECT d.id, d.webhook_id, d.account_id, d.event_id, d.event_type, d.payload, 'pending', 0, d.at, d.at, d.at
  FROM unnest($38::text[], $39::text[], $40::text[], $41::text[], $42::text[], $43::text[], $44::int8[]) AS d(id, webhook_id, account_id, event_id, event_type, payload, at)
  ON CONFLICT (id) DO NOTHING)
SELECT 1 / (count(*) = cardinality($1::text[]))::int AS ok, array_agg(id) AS ids, array_agg(balance_nano) AS balances, array_agg(version) AS versions FROM moved`,
};

/** Above any balance: planned from here, no debit of a batch is clamped, and the plan's figures are relative to it. */
const NOTIONAL_START = 2n ** 64n;

type Value = string | number | bigint | null;

/** A batch planned without knowing the balances: what it moves, and the statement's 44 arrays. */
export interface OneTripPlan {
  values: string[];
  /** Finishes the commit result from the balances and versions the statement returned. */
  result(moved: Map<string, AccountBalance>): CommitResult;
}

export function planOneTrip(batch: WriteBatch, accounts: string[]): OneTripPlan {
  const notional = new Map(accounts.map((id) => [id, { balanceNano: NOTIONAL_START, version: 0n }]));
  const plan = planBatch(batch, notional);
  const final = (id: string) => plan.result.balances.get(id)!.balanceNano;
  const lowest = new Map<string, bigint>(accounts.map((id) => [id, 0n]));
  batch.entries.forEach((entry, i) => {
    const dip = plan.result.balancesAfter[i]! - NOTIONAL_START;
    if (dip < lowest.get(entry.accountId)!) lowest.set(entry.accountId, dip);
  });
  return {
    values: statementValues(plan, accounts, final, lowest),
    result(moved) {
      const later = (i: number) => final(batch.entries[i]!.accountId) - plan.result.balancesAfter[i]!;
      return {
        applied: plan.result.applied,
        balancesAfter: batch.entries.map((entry, i) => moved.get(entry.accountId)!.balanceNano - later(i)),
        balances: moved,
      };
    },
  };
}

function statementValues(
  plan: BatchPlan,
  accounts: string[],
  final: (id: string) => bigint,
  lowest: Map<string, bigint>,
): string[] {
  const ledger = plan.ledger;
  const batchTag = nextBatchTag();
  const usage = [...plan.usage].sort(byUsageRow);
  const keyUsage = [...plan.keyUsage].sort(byKeyUsageRow);
  const keys = [...new Set([...plan.keySpend.keys(), ...plan.keysUsed.keys()])].sort();
  const columns: Value[][] = [
    accounts,
    accounts.map((id) => final(id) - NOTIONAL_START),
    accounts.map((id) => lowest.get(id)!),
    ledger.map((_, row) => ledgerIdSuffix(batchTag, row)),
    ledger.map((r) => r.account_id),
    ledger.map((r) => r.kind),
    ledger.map((r) => r.amount_nano),
    ledger.map((r) => final(r.account_id) - r.balance_after_nano),
    ledger.map((r) => r.request_id),
    ledger.map((r) => r.key_id),
    ledger.map((r) => r.model),
    ledger.map((r) => r.prompt_tokens),
    ledger.map((r) => r.completion_tokens),
    ledger.map((r) => r.note),
    ledger.map((r) => r.created_at),
    ledger.map((r) => r.billing),
    ledger.map((r) => r.endpoint),
    ledger.map((r) => r.answer_id),
    ledger.map((r) => r.detail),
    usage.map((u) => u.accountId),
    usage.map((u) => u.day),
    usage.map((u) => u.environment),
    usage.map((u) => u.model),
    usage.map((u) => u.requests),
    usage.map((u) => u.promptTokens),
    usage.map((u) => u.completionTokens),
    usage.map((u) => u.creditsNano),
    keyUsage.map((k) => k.keyId),
    keyUsage.map((k) => k.day),
    keyUsage.map((k) => k.accountId),
    keyUsage.map((k) => k.requests),
    keyUsage.map((k) => k.promptTokens),
    keyUsage.map((k) => k.completionTokens),
    keyUsage.map((k) => k.creditsNano),
    keys,
    keys.map((id) => plan.keySpend.get(id) ?? null),
    keys.map((id) => plan.keysUsed.get(id) ?? null),
    ...deliveryColumns(plan),
  ];
  return columns.map(arrayLiteral);
}

/** The outbox rows' columns; empty arrays, built once, for the usual batch without events. */
function deliveryColumns({ deliveries }: BatchPlan): Value[][] {
  if (deliveries.length === 0) return NO_DELIVERIES;
  return [
    deliveries.map((d) => d.id),
    deliveries.map((d) => d.webhookId),
    deliveries.map((d) => d.accountId),
    deliveries.map((d) => d.eventId),
    deliveries.map((d) => d.eventType),
    deliveries.map((d) => d.payload),
    deliveries.map((d) => d.at),
  ];
}

const NO_DELIVERIES: Value[][] = Array.from({ length: 7 }, () => []);

/**
 * A one-dimensional PostgreSQL array literal: integers in digits, every string double-quoted (backslash and quote
 * escaped). pg's own rendering of a JS array runs two regular-expression replacements on every element; here only
 * a string holding one of those characters is rewritten.
 */
export function arrayLiteral(values: readonly Value[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    const value = values[i]!;
    if (i > 0) out += ',';
    if (value === null) out += 'NULL';
    else if (typeof value === 'string')
      out += NEEDS_ESCAPING.test(value) ? `"${value.replace(ESCAPED, '\\$&')}"` : `"${value}"`;
    else if (typeof value === 'bigint' || Number.isSafeInteger(value)) out += value.toString();
    else throw new Error(`not an integer for SQL: ${value}`);
  }
  return `${out}}`;
}

const NEEDS_ESCAPING = /["\\]/;
const ESCAPED = /["\\]/g;

/** Usage rows in the global lock order (also the order of the two-round-trip path). */
export function byUsageRow(a: UsageDelta, b: UsageDelta): number {
  const left = `${a.accountId}\u0000${a.day}\u0000${a.environment}\u0000${a.model}`;
  const right = `${b.accountId}\u0000${b.day}\u0000${b.environment}\u0000${b.model}`;
  return left < right ? -1 : left > right ? 1 : 0;
}
