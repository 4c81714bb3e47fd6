/**
 * Reads a gateway's database directly and checks the money invariants, per account: the balance equals the sum
 * of its ledger and is never negative; the live usage counters equal the debits (money and tokens); each key's
 * `spent` equals its debits; no request is debited twice. On SQLite also `PRAGMA integrity_check`.
 */
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';

export interface AuditTarget {
  dialect: 'sqlite' | 'postgres';
  dataDir: string;
  databaseUrl?: string | undefined;
}

export interface Audit {
  accounts: number;
  ledgerRows: number;
  debits: number;
  debitedNano: bigint;
  /** `ok` or SQLite's report; `n/a` on PostgreSQL. */
  integrity: string;
  /** Every broken invariant, in words; empty when all hold. */
  problems: string[];
  /** What each request id was debited (nano-USD, positive). */
  debitedRequests: Map<string, bigint>;
}

const QUERIES = {
  balances: `SELECT a.id, a.balance_nano AS balance, COALESCE((SELECT SUM(l.amount_nano) FROM ledger l WHERE l.account_id = a.id), 0) AS ledger FROM accounts a`,
  debits: `SELECT account_id, key_id, request_id, amount_nano, prompt_tokens, completion_tokens FROM ledger WHERE kind = 'debit'`,
  usage: `SELECT account_id, SUM(credits_nano) AS credits, SUM(prompt_tokens) AS prompt, SUM(completion_tokens) AS completion FROM usage_daily WHERE environment = 'live' GROUP BY account_id`,
  keys: `SELECT id, spent_nano FROM api_keys`,
  rows: `SELECT COUNT(*) AS n FROM ledger`,
};

async function query(target: AuditTarget): Promise<{ rows: Record<keyof typeof QUERIES, any[]>; integrity: string }> {
  if (target.dialect === 'sqlite') {
    const db = new SQLite(join(target.dataDir, 'tollgate.db'), { readonly: true });
    db.defaultSafeIntegers(true);
    try {
      const integrity = (db.pragma('integrity_check') as Array<{ integrity_check: string }>)
        .map((r) => r.integrity_check)
        .join('; ');
      const rows = Object.fromEntries(
        Object.entries(QUERIES).map(([name, sql]) => [name, db.prepare(sql).all()]),
      ) as Record<keyof typeof QUERIES, any[]>;
      return { rows, integrity };
    } finally {
      db.close();
    }
  }
  const client = new pg.Client({ connectionString: target.databaseUrl });
  await client.connect();
  try {
    const answers: Array<[string, any[]]> = [];
    for (const [name, sql] of Object.entries(QUERIES)) answers.push([name, (await client.query(sql)).rows]);
    return { rows: Object.fromEntries(answers) as Record<keyof typeof QUERIES, any[]>, integrity: 'n/a' };
  } finally {
    await client.end();
  }
}

const big = (value: unknown): bigint => (value === null || value === undefined ? 0n : BigInt(value as string));

export async function auditLedger(target: AuditTarget): Promise<Audit> {
  const { rows, integrity } = await query(target);
  const problems: string[] = [];
  if (integrity !== 'ok' && integrity !== 'n/a') problems.push(`integrity_check: ${integrity}`);
  for (const row of rows.balances) {
    if (big(row.balance) !== big(row.ledger))
      problems.push(`account ${row.id}: balance ${row.balance} != ledger sum ${row.ledger}`);
    if (big(row.balance) < 0n) problems.push(`account ${row.id}: negative balance ${row.balance}`);
  }
  const perAccount = new Map<string, { credits: bigint; prompt: bigint; completion: bigint }>();
  const perKey = new Map<string, bigint>();
  const debitedRequests = new Map<string, bigint>();
  let debitedNano = 0n;
  for (const d of rows.debits) {
    const amount = -big(d.amount_nano);
    debitedNano += amount;
    const sums = perAccount.get(d.account_id) ?? { credits: 0n, prompt: 0n, completion: 0n };
    sums.credits += amount;
    sums.prompt += big(d.prompt_tokens);
    sums.completion += big(d.completion_tokens);
    perAccount.set(d.account_id, sums);
    if (d.key_id) perKey.set(d.key_id, (perKey.get(d.key_id) ?? 0n) + amount);
    if (d.request_id) {
      if (debitedRequests.has(d.request_id)) problems.push(`request ${d.request_id} debited twice`);
      debitedRequests.set(d.request_id, amount);
    }
  }
  const usage = new Map(
    rows.usage.map((u) => [
      u.account_id as string,
      { credits: big(u.credits), prompt: big(u.prompt), completion: big(u.completion) },
    ]),
  );
  for (const id of new Set([...perAccount.keys(), ...usage.keys()])) {
    const debits = perAccount.get(id) ?? { credits: 0n, prompt: 0n, completion: 0n };
    const counted = usage.get(id) ?? { credits: 0n, prompt: 0n, completion: 0n };
    for (const field of ['credits', 'prompt', 'completion'] as const) {
      if (debits[field] !== counted[field])
        problems.push(`account ${id}: usage ${field} ${counted[field]} != debits ${debits[field]}`);
    }
  }
  for (const key of rows.keys) {
    if (big(key.spent_nano) !== (perKey.get(key.id) ?? 0n))
      problems.push(`key ${key.id}: spent ${key.spent_nano} != debits ${perKey.get(key.id) ?? 0n}`);
  }
  return {
    accounts: rows.balances.length,
    ledgerRows: Number(big(rows.rows[0]?.n)),
    debits: rows.debits.length,
    debitedNano,
    integrity,
    problems,
    debitedRequests,
  };
}
