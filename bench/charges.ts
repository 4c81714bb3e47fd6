/**
 * Usage reads over a big ledger (issue 40): is ChargeStore fast on 10 million rows, on PostgreSQL and on SQLite?
 *
 *   npm run bench:charges                          10 million rows, both databases (several minutes each)
 *   npm run bench:charges -- --rows 200000 --only sqlite|postgres --keep
 *
 * For each database: seeds a ledger in SQL (bench/lib/charges-seed.ts) into a fresh database migrated by the
 * project's migrations (PostgreSQL: `tollgate_bench_charges` on TOLLGATE_BENCH_PG_URL's server, default
 * postgres://postgres@127.0.0.1:5432/test; SQLite: a file in the temp directory) and prints the seed time. Prints
 * the plans of the exact SQL ChargeStore issues (find, page, grouped) for the big account over the last calendar
 * month, saying which index each reads and whether one scans the table whole (SQLite's also without statistics,
 * as on a ledger grown since it was last analyzed). Then times, through `storage.charges`: grouped by day, model, key and
 * endpoint over the month and the year, a month's export through page() 1,000 rows at a time (rows/s, RSS growth)
 * and find (median of 100 lookups). `--keep` leaves the databases for the next run, which reuses them when their
 * ledger has the same number of rows; without it they are dropped at the end.
 */
import { parseArgs } from 'node:util';
import { openStorage, type ChargeRange } from '../src/storage/index.js';
import {
  benchDatabase,
  holdsLedger,
  recreate,
  withoutSqliteStatistics,
  type BenchDatabase,
  type Dialect,
  type RawDb,
} from './lib/charges-db.js';
import { chargeQueries, explain, verdict, type ChargeQuery, type PlanSample } from './lib/charges-plans.js';
import { BIG_ACCOUNT, YEAR_MS, seedLedger } from './lib/charges-seed.js';
import {
  EXPORT_PAGE_ROWS,
  exportRange,
  median,
  quantile,
  timeFind,
  timeGrouped,
  type TimingRow,
} from './lib/charges-timing.js';

/** PostgreSQL's default query timeout in the gateway (connect.ts): a read slower than this fails there. */
const QUERY_TIMEOUT_MS = 5_000;
const FIND_LOOKUPS = 100;
/** Without statistics SQLite's find may read the whole account: fewer lookups. */
const NO_STATISTICS_LOOKUPS = 20;

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '10000000' },
    only: { type: 'string' },
    keep: { type: 'boolean', default: false },
  },
});
const rows = Number(values.rows);
if (!Number.isInteger(rows) || rows < 10_000) throw new Error(`--rows ${values.rows}: give a whole number >= 10000`);
if (values.only !== undefined && values.only !== 'sqlite' && values.only !== 'postgres')
  throw new Error(`--only ${values.only}: sqlite or postgres`);
const dialects: Dialect[] = values.only ? [values.only] : ['postgres', 'sqlite'];

for (const dialect of dialects) await benchOne(benchDatabase(dialect));

async function benchOne(database: BenchDatabase): Promise<void> {
  const { dialect } = database;
  console.log(`\n=== ${dialect}: ledger of ${rows.toLocaleString('en-US')} rows ===`);
  if (values.keep && (await holdsLedger(database, rows))) console.log('reusing the seeded database (--keep)');
  else await seed(database);
  console.log(`database size: ${((await database.size()) / 1024 ** 3).toFixed(2)} GiB`);

  const raw = await database.openRaw();
  try {
    const sample = await pickSample(raw);
    const { month, year } = sample;
    console.log(
      `big account ${BIG_ACCOUNT}: ${await countDebits(raw, year)} debits in the year, ` +
        `${await countDebits(raw, month)} in ${monthName(month)}`,
    );
    const queries = await chargeQueries(dialect, sample.plan);
    const plans = await planLines(raw, queries, true);
    const timings = [
      ...(await timeCharges(database, sample)),
      ...(await timeFinds(database, sample, FIND_LOOKUPS, '')),
    ];
    if (dialect === 'sqlite')
      await withoutSqliteStatistics(raw, async () => {
        plans.push(
          '  without statistics (a ledger grown since it was last analyzed):',
          ...(await planLines(raw, queries, false)),
        );
        timings.push(...(await timeFinds(database, sample, NO_STATISTICS_LOOKUPS, ', no statistics')));
      });
    console.log(`\nplans on ${dialect}, ${BIG_ACCOUNT}, ${monthName(month)}:\n${plans.join('\n')}`);
    printTimings(dialect, timings);
  } finally {
    await raw.close();
    if (!values.keep) await database.drop();
  }
}

/** Through `storage.charges`: grouped over the month and the year, the month's export, find. */
async function timeCharges(database: BenchDatabase, sample: Sample): Promise<TimingRow[]> {
  const storage = await openStorage({ ...database.storageOptions, migrate: false, queryTimeoutMs: 0 });
  try {
    const grouped = await timeGrouped(storage.charges, { month: sample.month, year: sample.year });
    const exported = await exportRange(storage.charges, sample.month);
    if (exported.rows !== grouped.requests.month)
      throw new Error(`the export gave ${exported.rows} rows, grouped counts ${grouped.requests.month}`);
    return [
      ...grouped.rows,
      {
        operation: `export, page(${EXPORT_PAGE_ROWS}) until done`,
        range: 'month',
        result: `${exported.rows} rows, ${exported.pages} pages`,
        runsMs: [exported.ms],
        note:
          `${Math.round(exported.rows / (exported.ms / 1000))} rows/s, sum ${exported.amountNano} nano; RSS peak ` +
          `+${exported.earlyPeakRssDeltaMb.toFixed(0)} MB over the first pages, +${exported.peakRssDeltaMb.toFixed(0)} MB ` +
          `over all` +
          (exported.retainedHeapMb === undefined
            ? ''
            : `; heap retained after GC ${exported.retainedHeapMb.toFixed(1)} MB`),
      },
    ];
  } finally {
    await storage.close();
  }
}

/** `find` by each kind of id, `lookups` times each, on a fresh openStorage. */
async function timeFinds(database: BenchDatabase, sample: Sample, lookups: number, label: string) {
  const storage = await openStorage({ ...database.storageOptions, migrate: false, queryTimeoutMs: 0 });
  try {
    const rows: TimingRow[] = [];
    for (const [kind, ids] of Object.entries(sample.findIds))
      rows.push(
        findRow(`find by ${kind}${label}`, await timeFind(storage.charges, BIG_ACCOUNT, ids.slice(0, lookups))),
      );
    return rows;
  } finally {
    await storage.close();
  }
}

async function seed(database: BenchDatabase): Promise<void> {
  await recreate(database);
  const raw = await database.openRaw();
  try {
    const times = await seedLedger(raw, rows, (line) => console.log(line));
    const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
    console.log(
      `seeded in ${seconds(times.accountsMs + times.ledgerMs + times.indexesMs + times.analyzeMs)}: ` +
        `accounts and keys ${seconds(times.accountsMs)}, ledger rows ${seconds(times.ledgerMs)}, ` +
        `indexes ${seconds(times.indexesMs)}, ${database.dialect === 'postgres' ? 'VACUUM ANALYZE' : 'ANALYZE'} ` +
        seconds(times.analyzeMs),
    );
  } finally {
    await raw.close();
  }
}

interface Sample {
  /** The big account's last calendar month (UTC), and the year before now. */
  month: ChargeRange;
  year: ChargeRange;
  /** For the plans: ids to find and a cursor in the middle of the month. */
  plan: PlanSample;
  /** Ids of random debits of the month, by kind of id. */
  findIds: Record<'request_id' | 'answer_id' | 'ledger id', string[]>;
}

async function pickSample(raw: RawDb): Promise<Sample> {
  const now = new Date();
  const month: ChargeRange = {
    accountId: BIG_ACCOUNT,
    fromMs: Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1),
    toMs: Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1),
  };
  const year: ChargeRange = { accountId: BIG_ACCOUNT, fromMs: now.getTime() - YEAR_MS, toMs: now.getTime() + 1 };
  const ids = await raw.all(
    `SELECT id, request_id, answer_id FROM ledger ${debitsIn(month)} AND answer_id IS NOT NULL
     ORDER BY random() LIMIT ${FIND_LOOKUPS}`,
  );
  const middle = Math.floor((month.fromMs + month.toMs) / 2);
  const [cursorRow] = await raw.all(
    `SELECT created_at, id FROM ledger ${debitsIn({ ...month, fromMs: middle })} ORDER BY created_at, id LIMIT 1`,
  );
  if (!cursorRow || ids.length < FIND_LOOKUPS) throw new Error(`the big account has too few debits in the month`);
  const column = (name: string) => ids.map((row) => String(row[name]));
  return {
    month,
    year,
    plan: {
      range: month,
      requestId: String(ids[0]!.request_id),
      answerId: String(ids[1]!.answer_id),
      cursor: { createdAt: Number(cursorRow.created_at), id: String(cursorRow.id) },
    },
    findIds: { request_id: column('request_id'), answer_id: column('answer_id'), 'ledger id': column('id') },
  };
}

function debitsIn(range: ChargeRange): string {
  return `WHERE account_id = '${range.accountId}' AND kind = 'debit'
    AND created_at >= ${range.fromMs} AND created_at < ${range.toMs}`;
}

async function countDebits(raw: RawDb, range: ChargeRange): Promise<string> {
  const [row] = await raw.all(`SELECT count(*) AS n FROM ledger ${debitsIn(range)}`);
  return Number(row?.n).toLocaleString('en-US');
}

/** One line per query: verdict and plan; with `print`, each statement and its whole plan first. */
async function planLines(raw: RawDb, queries: ChargeQuery[], print: boolean): Promise<string[]> {
  const lines: string[] = [];
  for (const query of queries) {
    const plan = await explain(raw, query);
    if (print) console.log(`\n--- ${query.name} ---\n${query.sql}\n${plan.text}\n=> ${verdict(plan)}`);
    lines.push(`  ${query.name.padEnd(22)} ${verdict(plan).padEnd(6)} ${plan.summary}`);
  }
  return lines;
}

function findRow(operation: string, runsMs: number[]): TimingRow {
  const p95 = quantile(runsMs, 0.95);
  return {
    operation,
    range: '-',
    result: `median of ${runsMs.length}`,
    runsMs: [median(runsMs)],
    note: `p95 ${p95.toFixed(2)} ms, max ${Math.max(...runsMs).toFixed(2)} ms`,
  };
}

function printTimings(dialect: Dialect, timings: TimingRow[]): void {
  const header = ['operation', 'range', 'result', 'ms', 'best ms', 'note'];
  const lines = timings.map((row) => {
    const slow = Math.min(...row.runsMs) > QUERY_TIMEOUT_MS ? `over the gateway's ${QUERY_TIMEOUT_MS} ms timeout` : '';
    return [
      row.operation,
      row.range,
      row.result,
      row.runsMs[0]!.toFixed(row.runsMs[0]! < 10 ? 2 : 0),
      row.runsMs.length > 1 ? Math.min(...row.runsMs).toFixed(0) : '',
      [row.note, slow].filter(Boolean).join('; '),
    ];
  });
  const widths = header.map((_, i) => Math.max(...[header, ...lines].map((line) => line[i]!.length)));
  const format = (line: string[]) =>
    line
      .map((cell, i) => cell.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  console.log(`\ntimings on ${dialect}, ${BIG_ACCOUNT}:\n${[header, ...lines].map(format).join('\n')}`);
  console.log('ms: the first of 3 runs (grouped), the whole export, the median lookup (find)');
}

function monthName(range: ChargeRange): string {
  return new Date(range.fromMs).toISOString().slice(0, 7);
}
