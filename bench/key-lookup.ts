/**
 * The key lookup on PostgreSQL: how long `KeyStore.getByHashes` takes now that it joins the owner's membership and
 * email and sums each resetting key's usage_daily_keys rows since its period began.
 *
 *   npm run bench:keys
 *   npm run bench:keys -- --keys 500 --background 20000 --batch 1,100,500 --runs 50 --keep
 *
 * Seeds a fresh database `tollgate_bench_keys` on TOLLGATE_BENCH_PG_URL's server (default
 * postgres://postgres@127.0.0.1:5432/test), migrated by the project's migrations: one account with `--keys` keys
 * owned in turn by its ten members (one key in ten by the operator), a quarter with `limit_reset` daily, a quarter
 * monthly, each of those with a usage_daily_keys row for every one of the last 30 days. `--background` keys of the same
 * mix in other accounts (ten each) make the tables bigger than the account. Then times `storage.keys.getByHashes`
 * (openStorage, no mock) with each `--batch` size of the account's hashes, `--runs` times after a warm-up, a fresh
 * random batch each run, beside the same keys read from api_keys alone; and prints EXPLAIN (ANALYZE, BUFFERS) of the
 * exact SQL the store sends. The database is dropped at the end unless `--keep`.
 */
import { parseArgs } from 'node:util';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DummyDriver, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler } from 'kysely';
import type { CompiledQuery } from 'kysely';
import pg from 'pg';
import { migrateStorage, openStorage, type Storage } from '../src/storage/index.js';
import { KeyStore } from '../src/storage/keys.js';
import type { Database } from '../src/storage/schema.js';

const { values: args } = parseArgs({
  options: {
    keys: { type: 'string', default: '500' },
    background: { type: 'string', default: '20000' },
    batch: { type: 'string', default: '1,100,500' },
    runs: { type: 'string', default: '50' },
    keep: { type: 'boolean', default: false },
  },
});
const KEYS = Number(args.keys);
const BACKGROUND = Number(args.background);
const BATCHES = args.batch.split(',').map(Number);
const RUNS = Number(args.runs);
const WARM_UP = 5;
const USAGE_DAYS = 30;

const ADMIN_URL = process.env.TOLLGATE_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const DATABASE = 'tollgate_bench_keys';
const url = new URL(ADMIN_URL);
url.pathname = `/${DATABASE}`;
const storageOptions = { dataDir: join(tmpdir(), 'tollgate-bench-keys'), databaseUrl: url.toString() };

async function admin(sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * Accounts `acct_0` (the measured one) to `acct_<n>`, ten members each (`usr_<account>_<0..9>`, the first the owner),
 * keys `key_<i>` with the HMAC-sized hash sha256(i); key i belongs to acct_0 while i < KEYS, else to the account of its
 * ten. Key i: daily limit when i % 4 = 0, monthly when 1, none otherwise; owner member i % 10, none when that is 9.
 */
async function seed(client: pg.Client): Promise<void> {
  const accounts = 1 + Math.ceil(BACKGROUND / 10);
  const total = KEYS + BACKGROUND;
  const now = Date.now();
  const accountOf = `case when i < ${KEYS} then 0 else 1 + (i - ${KEYS}) / 10 end`;
  await client.query(
    `INSERT INTO accounts (id, email, plan, balance_nano, version, settings, created_at)
     SELECT 'acct_' || a, 'owner' || a || '@example.com', 'free', 1000000000000, 1, '{}', ${now}
     FROM generate_series(0, ${accounts - 1}) AS a`,
  );
  await client.query(
    `INSERT INTO users (id, email, password_hash, created_at)
     SELECT 'usr_' || a || '_' || m, 'm' || m || '.' || a || '@example.com', 'x', ${now}
     FROM generate_series(0, ${accounts - 1}) AS a, generate_series(0, 9) AS m`,
  );
  await client.query(
    `INSERT INTO members (account_id, user_id, role, created_at)
     SELECT 'acct_' || a, 'usr_' || a || '_' || m, case m when 0 then 'owner' when 1 then 'admin' else 'member' end, ${now}
     FROM generate_series(0, ${accounts - 1}) AS a, generate_series(0, 9) AS m`,
  );
  await client.query(
    `INSERT INTO api_keys (id, account_id, name, key_hash, hint, environment, permissions, models, spend_limit_nano,
       spent_nano, created_at, limit_reset, allowed_ips, owner_user_id)
     SELECT 'key_' || i, 'acct_' || (${accountOf}), 'key ' || i, encode(sha256(i::text::bytea), 'hex'), 'tg-live-…',
       'live', 'full', '[]', 5000000000, 0, ${now} + i,
       case i % 4 when 0 then 'daily' when 1 then 'monthly' end, '[]',
       case when i % 10 = 9 then null else 'usr_' || (${accountOf}) || '_' || (i % 10) end
     FROM generate_series(0, ${total - 1}) AS i`,
  );
  await client.query(
    `INSERT INTO usage_daily_keys (key_id, day, account_id, requests, prompt_tokens, completion_tokens, credits_nano)
     SELECT k.id, to_char(current_date - d, 'YYYY-MM-DD'), k.account_id, 10, 1000, 500, 1000000
     FROM api_keys k, generate_series(0, ${USAGE_DAYS - 1}) AS d WHERE k.limit_reset IS NOT NULL`,
  );
  await client.query('ANALYZE');
}

/** The SQL the store sends for `hashes`, compiled by Kysely without a database. */
async function storeSql(hashes: string[]): Promise<CompiledQuery> {
  const recorded: CompiledQuery[] = [];
  const db = new Kysely<Database>({
    dialect: {
      createAdapter: () => new PostgresAdapter(),
      createDriver: () => new DummyDriver(),
      createIntrospector: (k) => new PostgresIntrospector(k),
      createQueryCompiler: () => new PostgresQueryCompiler(),
    },
    log: (event) => void recorded.push(event.query),
  });
  await new KeyStore(db).getByHashes(hashes);
  await db.destroy();
  return recorded.at(-1)!;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

function pick(hashes: string[], count: number): string[] {
  const chosen = new Set<string>();
  while (chosen.size < count) chosen.add(hashes[Math.floor(Math.random() * hashes.length)]!);
  return [...chosen];
}

/** `run` made ready for a fresh random batch of `batch` hashes (untimed), then timed; it answers how many it found. */
async function time(
  name: string,
  batch: number,
  hashes: string[],
  prepare: (chosen: string[]) => Promise<() => Promise<number>>,
) {
  const samples: number[] = [];
  for (let run = 0; run < WARM_UP + RUNS; run++) {
    const lookUp = await prepare(pick(hashes, batch));
    const start = performance.now();
    const found = await lookUp();
    if (run >= WARM_UP) samples.push(performance.now() - start);
    if (found !== batch) throw new Error(`${name}: found ${found} of ${batch} keys`);
  }
  const sorted = samples.sort((a, b) => a - b);
  const ms = (value: number) => value.toFixed(2).padStart(7);
  console.log(
    `${name.padEnd(34)} ${String(batch).padStart(5)}  median ${ms(percentile(sorted, 50))} ms  p95 ${ms(percentile(sorted, 95))} ms  max ${ms(sorted.at(-1)!)} ms`,
  );
}

async function main(): Promise<void> {
  await admin(`DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`);
  await admin(`CREATE DATABASE ${DATABASE}`);
  let storage: Storage | undefined;
  const raw = new pg.Client({ connectionString: storageOptions.databaseUrl });
  try {
    await migrateStorage(storageOptions);
    await raw.connect();
    const seeding = performance.now();
    await seed(raw);
    const counts = (
      await raw.query<{ keys: string; usage: string }>(
        'SELECT (SELECT count(*) FROM api_keys) AS keys, (SELECT count(*) FROM usage_daily_keys) AS usage',
      )
    ).rows[0]!;
    console.log(
      `seeded ${counts.keys} keys (${KEYS} in acct_0), ${counts.usage} usage_daily_keys rows in ${((performance.now() - seeding) / 1000).toFixed(1)} s\n`,
    );
    const hashes = (
      await raw.query<{ key_hash: string }>("SELECT key_hash FROM api_keys WHERE account_id = 'acct_0'")
    ).rows.map((row) => row.key_hash);

    storage = await openStorage({ ...storageOptions, migrate: false });
    const keys = storage.keys;
    console.log(`${'lookup'.padEnd(34)} ${'keys'.padStart(5)}  (${RUNS} runs after ${WARM_UP} to warm up)`);
    for (const batch of BATCHES) {
      await time('KeyStore.getByHashes', batch, hashes, (chosen) =>
        Promise.resolve(async () => (await keys.getByHashes(chosen)).size),
      );
      // The same SQL on one plain connection, and the keys read from api_keys alone: what the joins and sums cost.
      await time('  its SQL, one pg connection', batch, hashes, async (chosen) => {
        const query = await storeSql(chosen);
        return async () => (await raw.query(query.sql, query.parameters as unknown[])).rowCount!;
      });
      await time('  api_keys alone, one pg connection', batch, hashes, (chosen) =>
        Promise.resolve(
          async () =>
            (await raw.query('SELECT * FROM api_keys WHERE key_hash = ANY($1) ORDER BY created_at, id', [chosen]))
              .rowCount!,
        ),
      );
    }
    for (const batch of BATCHES) {
      const query = await storeSql(pick(hashes, batch));
      const plan = await raw.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN (ANALYZE, BUFFERS) ${query.sql}`,
        query.parameters as unknown[],
      );
      console.log(`\nEXPLAIN (ANALYZE, BUFFERS), ${batch} hash${batch === 1 ? '' : 'es'}:`);
      // The hashes themselves, as many as the batch, say nothing about the plan.
      const text = plan.rows.map((row) => row['QUERY PLAN']).join('\n');
      console.log(text.replace(/'\{[0-9a-f,]+\}'::text\[\]/g, `'{…${batch} hashes…}'::text[]`));
    }
  } finally {
    await storage?.close();
    await raw.end();
    if (!args.keep) await admin(`DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`);
  }
}

await main();
