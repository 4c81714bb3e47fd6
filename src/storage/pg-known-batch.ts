/**
 * The one-round-trip batch of PgWriter as a single prepared statement: planned once per connection, its rows
 * passed as one array literal per column, run in its own implicit transaction. Against the same
 * batch sent as BEGIN, five statements and COMMIT in the simple protocol, PostgreSQL's CPU per batch went from
 * 0.34-0.43 to 0.23 ms and the round trip from 0.58-0.76 to 0.44-0.51 ms (docs/performance.md).
 *
 * Lock order: `locked` takes the accounts' row locks sorted by id before `moved` updates any of them (its count is
 * a one-time filter of the update); the usage rows and keys, written after the main query, belong to those
 * accounts. The final division by zero (SQLSTATE 22012) aborts the whole statement when an account did not hold the
 * balance and version the batch was planned on.
 */
import type { AccountBalance, BatchPlan, UsageDelta } from './batch.js';

export const COMMIT_ON_KNOWN = {
  name: 'tollgate_commit_on_known',
  text: `WITH locked AS (SELECT id FROM accounts WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE),
moved AS (
  UPDATE accounts a SET balance_nano = v.balance_nano, version = v.version
  FROM unnest($1::text[], $2::int8[], $3::int8[], $4::int8[], $5::int8[]) AS v(id, balance_nano, version, from_balance_nano, from_version)
  WHERE a.id = v.id AND a.balance_nano = v.from_balance_nano AND a.version = v.from_version
    AND (SELECT count(*) FROM locked) = cardinality($1::text[])
  RETURNING 1),
ledger_rows AS (
  INSERT INTO ledger (id, account_id, kind, amount_nano, balance_after_nano, request_id, key_id, model, prompt_tokens, completion_tokens, note, created_at)
  SELECT * FROM unnest($6::text[], $7::text[], $8::text[], $9::int8[], $10::int8[], $11::text[], $12::text[], $13::text[], $14::int8[], $15::int8[], $16::text[], $17::int8[])),
usage_rows AS (
  INSERT INTO usage_daily AS d (account_id, day, environment, model, requests, prompt_tokens, completion_tokens, credits_nano)
  SELECT * FROM unnest($18::text[], $19::text[], $20::text[], $21::text[], $22::int8[], $23::int8[], $24::int8[], $25::int8[])
  ON CONFLICT (account_id, day, environment, model) DO UPDATE SET requests = d.requests + excluded.requests,
    prompt_tokens = d.prompt_tokens + excluded.prompt_tokens, completion_tokens = d.completion_tokens + excluded.completion_tokens,
    credits_nano = d.credits_nano + excluded.credits_nano),
key_rows AS (
  UPDATE api_keys k SET spent_nano = k.spent_nano + coalesce(v.spent_nano, 0), last_used_at = coalesce(v.last_used_at, k.last_used_at)
  FROM unnest($26::text[], $27::int8[], $28::int8[]) AS v(id, spent_nano, last_used_at)
  WHERE k.id = v.id)
SELECT 1 / (count(*) = cardinality($1::text[]))::int AS ok FROM moved`,
};

type Value = string | number | bigint | null;

/** The statement's 28 arrays for a plan made on `current` (the balances it must still find), as array literals. */
export function knownBalanceValues(plan: BatchPlan, current: Map<string, AccountBalance>): string[] {
  const accounts = [...plan.result.balances];
  const ledger = plan.ledger;
  const usage = [...plan.usage].sort(byUsageRow);
  const keys = [...new Set([...plan.keySpend.keys(), ...plan.keysUsed.keys()])].sort();
  const columns: Value[][] = [
    accounts.map(([id]) => id),
    accounts.map(([, to]) => to.balanceNano),
    accounts.map(([, to]) => to.version),
    accounts.map(([id]) => current.get(id)!.balanceNano),
    accounts.map(([id]) => current.get(id)!.version),
    ledger.map((r) => r.id),
    ledger.map((r) => r.account_id),
    ledger.map((r) => r.kind),
    ledger.map((r) => r.amount_nano),
    ledger.map((r) => r.balance_after_nano),
    ledger.map((r) => r.request_id),
    ledger.map((r) => r.key_id),
    ledger.map((r) => r.model),
    ledger.map((r) => r.prompt_tokens),
    ledger.map((r) => r.completion_tokens),
    ledger.map((r) => r.note),
    ledger.map((r) => r.created_at),
    usage.map((u) => u.accountId),
    usage.map((u) => u.day),
    usage.map((u) => u.environment),
    usage.map((u) => u.model),
    usage.map((u) => u.requests),
    usage.map((u) => u.promptTokens),
    usage.map((u) => u.completionTokens),
    usage.map((u) => u.creditsNano),
    keys,
    keys.map((id) => plan.keySpend.get(id) ?? null),
    keys.map((id) => plan.keysUsed.get(id) ?? null),
  ];
  return columns.map(arrayLiteral);
}

/**
 * A one-dimensional PostgreSQL array literal: integers as digits, every string double-quoted (backslash and quote
 * escaped). pg's own rendering of a JS array runs two regular-expression replacements on every element; here only
 * a string holding one of those characters is rewritten.
 */
export function arrayLiteral(values: readonly Value[]): string {
  let out = '{';
  for (let i = 0; i < values.length; i++) {
    const value = values[i]!;
    if (i > 0) out += ',';
    if (value === null) out += 'NULL';
    else if (typeof value === 'string') out += NEEDS_ESCAPING.test(value) ? `"${value.replace(ESCAPED, '\\$&')}"` : `"${value}"`;
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
