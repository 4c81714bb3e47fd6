/**
 * The query plans of exactly the SQL that ChargeStore issues: its methods run on a Kysely with the dialect's
 * compiler and a driver that executes nothing, and the compiled statements (with their parameters) go to the real
 * database under EXPLAIN (ANALYZE, BUFFERS) on PostgreSQL and EXPLAIN QUERY PLAN on SQLite.
 */
import {
  DummyDriver,
  Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
  type CompiledQuery,
} from 'kysely';
import { ChargeStore, type ChargeCursor, type ChargeGrouping, type ChargeRange } from '../../src/storage/charges.js';
import type { Database } from '../../src/storage/schema.js';
import type { Dialect, RawDb } from './charges-db.js';

export interface ChargeQuery {
  name: string;
  sql: string;
  parameters: readonly unknown[];
  /** The ledger indexes a good plan reads. */
  expects: string[];
}

export interface Plan {
  query: ChargeQuery;
  text: string;
  /** Ledger indexes the plan reads. */
  indexes: string[];
  fullScan: boolean;
  /** One line: how it reads the ledger and what it does with the rows. */
  summary: string;
}

export interface PlanSample {
  range: ChargeRange;
  requestId: string;
  answerId: string;
  cursor: ChargeCursor;
}

const LEDGER_INDEXES = [
  'ledger_account_time',
  'ledger_request',
  'ledger_answer',
  'ledger_pkey',
  'sqlite_autoindex_ledger_1',
];
const GROUPINGS: ChargeGrouping[] = ['day', 'model', 'key', 'endpoint'];

/** ChargeStore's statements for the sample: find (both ids), page (first and after a cursor), grouped (each). */
export async function chargeQueries(dialect: Dialect, sample: PlanSample): Promise<ChargeQuery[]> {
  const recorded: CompiledQuery[] = [];
  const db = new Kysely<Database>({
    dialect: {
      createAdapter: () => (dialect === 'postgres' ? new PostgresAdapter() : new SqliteAdapter()),
      createDriver: () => new DummyDriver(),
      createIntrospector: (k) => (dialect === 'postgres' ? new PostgresIntrospector(k) : new SqliteIntrospector(k)),
      createQueryCompiler: () => (dialect === 'postgres' ? new PostgresQueryCompiler() : new SqliteQueryCompiler()),
    },
    log: (event) => void recorded.push(event.query),
  });
  const charges = new ChargeStore(db);
  const queries: ChargeQuery[] = [];
  const record = async (name: string, expects: string[], call: () => Promise<unknown>) => {
    await call();
    const compiled = recorded.at(-1)!;
    queries.push({ name, sql: compiled.sql, parameters: compiled.parameters, expects });
  };
  const { range, requestId, answerId, cursor } = sample;
  const byId = ['ledger_request', 'ledger_answer'];
  await record('find by request_id', byId, () => charges.find(range.accountId, requestId));
  await record('find by answer_id', byId, () => charges.find(range.accountId, answerId));
  await record('page, first', ['ledger_account_time'], () => charges.page(range, 1_000));
  await record('page, after a cursor', ['ledger_account_time'], () => charges.page(range, 1_000, cursor));
  for (const by of GROUPINGS)
    await record(`grouped by ${by}`, ['ledger_account_time'], () => charges.grouped(range, by));
  await db.destroy();
  return queries;
}

export async function explain(raw: RawDb, query: ChargeQuery): Promise<Plan> {
  const text =
    raw.dialect === 'postgres'
      ? (await raw.all(`EXPLAIN (ANALYZE, BUFFERS) ${query.sql}`, query.parameters))
          .map((row) => String(row['QUERY PLAN']))
          .join('\n')
      : sqliteTree(await raw.all(`EXPLAIN QUERY PLAN ${query.sql}`, query.parameters));
  const indexes = LEDGER_INDEXES.filter((index) => new RegExp(`\\b${index}\\b`).test(text));
  const fullScan = /Seq Scan on ledger|^\s*SCAN ledger\b/m.test(text);
  return { query, text, indexes, fullScan, summary: summarize(raw.dialect, text) };
}

/** "ok" when the plan reads the expected indexes and scans no table whole; what is wrong otherwise. */
export function verdict(plan: Plan): string {
  if (plan.fullScan) return 'FULL SCAN of ledger';
  const missing = plan.query.expects.filter((index) => !plan.indexes.includes(index));
  return missing.length ? `does not use ${missing.join(', ')}` : 'ok';
}

/** SQLite's plan rows (id, parent, detail) as an indented tree. */
function sqliteTree(rows: Array<Record<string, unknown>>): string {
  const depth = new Map<number, number>([[0, -1]]);
  return rows
    .map((row) => {
      const level = (depth.get(Number(row.parent)) ?? -1) + 1;
      depth.set(Number(row.id), level);
      return `${'  '.repeat(level)}${String(row.detail)}`;
    })
    .join('\n');
}

/** PostgreSQL: the plan's nodes, outermost first, and the execution time; SQLite: its rows. */
function summarize(dialect: Dialect, text: string): string {
  const lines = text.split('\n');
  if (dialect === 'sqlite') return lines.map((line) => line.trim()).join('; ');
  const nodes = lines
    .filter((line) => line.includes('(cost='))
    .map((line) => line.replace(/^[\s>-]*/, '').replace(/\s*\(cost=.*$/, ''));
  const execution = lines.find((line) => line.startsWith('Execution Time'));
  return `${nodes.join(' > ')}${execution ? ` (${execution.replace('Execution Time: ', '')})` : ''}`;
}
