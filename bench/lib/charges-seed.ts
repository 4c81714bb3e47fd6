/**
 * A ledger of N rows written by the database itself: INSERT ... SELECT over generate_series (PostgreSQL) or a
 * recursive CTE (SQLite), a million rows per statement. Shaped like a busy gateway's: 1,000 accounts, one of which
 * (BIG_ACCOUNT) holds 30% of the rows and the rest a skewed share each; 5 keys per account; 10 models; 5
 * endpoints; created_at spread evenly over the 12 months ending now, ids in time order like `newId`'s; 1% top-ups,
 * the rest debits with billing and detail JSON. The ledger's secondary indexes are dropped during the load and
 * created again from their own definitions (CREATE INDEX builds them far faster than 10 million inserts do).
 */
import type { RawDb } from './charges-db.js';

export const BIG_ACCOUNT = 'acct_0000';
const ACCOUNTS = 1_000;
const KEYS_PER_ACCOUNT = 5;
const BIG_ACCOUNT_SHARE = 0.3;
const TOPUP_SHARE = 0.01;
const ROWS_PER_STATEMENT = 1_000_000;
export const YEAR_MS = 365 * 86_400_000;

/** Name, provider, nano-USD per input and per output token. The last is the embeddings endpoint's. */
const MODELS: Array<[string, string, number, number]> = [
  ['gpt-4o-mini', 'openai', 150, 600],
  ['gpt-4o', 'openai', 2_500, 10_000],
  ['gpt-4.1', 'openai', 2_000, 8_000],
  ['o4-mini', 'openai', 1_100, 4_400],
  ['claude-sonnet-4', 'anthropic', 3_000, 15_000],
  ['claude-haiku-3-5', 'anthropic', 800, 4_000],
  ['gemini-2.5-flash', 'gemini', 300, 2_500],
  ['mistral-small', 'mistral', 100, 300],
  ['llama-3.3-70b', 'groq', 590, 790],
  ['text-embedding-3-small', 'openai', 20, 0],
];
const EMBEDDING_MODEL = MODELS.length - 1;

/** Path, share of requests, prefix of the answer's id (embeddings answers have none). */
const ENDPOINTS: Array<[string, number, string | null]> = [
  ['/v1/chat/completions', 0.55, 'chatcmpl-'],
  ['/v1/responses', 0.15, 'resp_'],
  ['/v1/messages', 0.15, 'msg_'],
  ['/v1/embeddings', 0.1, null],
  ['/v1/completions', 0.05, 'cmpl-'],
];
const EMBEDDINGS = 3;

/** What differs between the dialects' SQL. */
interface Flavor {
  /** The body of CTE `numbers(i)`: first..last. */
  numbers(first: number, last: number): string;
  /** Uniform in [0, 1). */
  uniform: string;
  int(expr: string): string;
  pad(expr: string, width: number): string;
  /** 24 random hex digits. */
  hex: string;
}

const POSTGRES: Flavor = {
  numbers: (first, last) => `SELECT generate_series(${first}::bigint, ${last}::bigint)`,
  uniform: 'random()',
  int: (expr) => `floor(${expr})::bigint`,
  pad: (expr, width) => `lpad((${expr})::text, ${width}, '0')`,
  hex: 'substr(md5(random()::text), 1, 24)',
};

const SQLITE: Flavor = {
  numbers: (first, last) => `SELECT ${first} UNION ALL SELECT i + 1 FROM numbers WHERE i < ${last}`,
  uniform: '((random() & 9007199254740991) / 9007199254740992.0)',
  int: (expr) => `CAST(${expr} AS INTEGER)`,
  pad: (expr, width) => `printf('%0${width}d', ${expr})`,
  hex: 'lower(hex(randomblob(12)))',
};

export interface SeedTimes {
  accountsMs: number;
  ledgerMs: number;
  indexesMs: number;
  analyzeMs: number;
}

/** Seeds an empty, migrated database; `progress` gets a line per million rows. */
export async function seedLedger(raw: RawDb, rows: number, progress: (line: string) => void): Promise<SeedTimes> {
  const flavor = raw.dialect === 'postgres' ? POSTGRES : SQLITE;
  const nowMs = Date.now();
  const startMs = nowMs - YEAR_MS;
  // This session only: a bulk load needs no durability until it is done. The rows reference existing accounts by
  // construction; PostgreSQL checks the foreign key anyway, SQLite is spared it.
  const setup =
    raw.dialect === 'postgres'
      ? ['SET synchronous_commit = off', "SET work_mem = '256MB'", "SET maintenance_work_mem = '1GB'"]
      : [
          'PRAGMA journal_mode = DELETE',
          'PRAGMA synchronous = OFF',
          'PRAGMA foreign_keys = OFF',
          'PRAGMA cache_size = -1000000',
        ];
  for (const statement of setup) await raw.exec(statement);

  let t = performance.now();
  await raw.exec('BEGIN');
  await raw.exec(accountsSql(flavor, startMs));
  await raw.exec(keysSql(flavor, startMs));
  const accountsMs = performance.now() - t;

  t = performance.now();
  const indexes = await secondaryIndexes(raw);
  for (const index of indexes) await raw.exec(`DROP INDEX ${index.name}`);
  for (let first = 1; first <= rows; first += ROWS_PER_STATEMENT) {
    const last = Math.min(rows, first + ROWS_PER_STATEMENT - 1);
    await raw.exec(ledgerSql(flavor, first, last, rows, startMs, nowMs - startMs));
    progress(`  ${last.toLocaleString('en-US')} rows, ${((performance.now() - t) / 1000).toFixed(0)} s`);
  }
  const ledgerMs = performance.now() - t;

  t = performance.now();
  for (const index of indexes) await raw.exec(index.sql);
  await raw.exec('COMMIT');
  const indexesMs = performance.now() - t;

  t = performance.now();
  if (raw.dialect === 'postgres') await raw.exec('VACUUM (ANALYZE)');
  else for (const statement of ['ANALYZE', 'PRAGMA journal_mode = WAL']) await raw.exec(statement);
  return { accountsMs, ledgerMs, indexesMs, analyzeMs: performance.now() - t };
}

/** The ledger's indexes other than its primary key, with the statements that create them. */
async function secondaryIndexes(raw: RawDb): Promise<Array<{ name: string; sql: string }>> {
  const rows =
    raw.dialect === 'postgres'
      ? await raw.all(
          "SELECT indexname AS name, indexdef AS sql FROM pg_indexes WHERE tablename = 'ledger' AND indexname <> 'ledger_pkey'",
        )
      : await raw.all(
          "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'ledger' AND sql IS NOT NULL",
        );
  return rows.map((row) => ({ name: String(row.name), sql: String(row.sql) }));
}

function accountsSql(f: Flavor, createdAt: number): string {
  return `WITH RECURSIVE numbers(i) AS (${f.numbers(0, ACCOUNTS - 1)})
    INSERT INTO accounts (id, email, plan, balance_nano, version, settings, created_at)
    SELECT 'acct_' || ${f.pad('i', 4)}, 'bench-' || ${f.pad('i', 4)} || '@example.com', 'free',
      1000000000000, 1, '{}', ${createdAt}
    FROM numbers`;
}

function keysSql(f: Flavor, createdAt: number): string {
  const account = `i / ${KEYS_PER_ACCOUNT}`;
  return `WITH RECURSIVE numbers(i) AS (${f.numbers(0, ACCOUNTS * KEYS_PER_ACCOUNT - 1)})
    INSERT INTO api_keys (id, account_id, name, key_hash, hint, environment, permissions, models, spent_nano, created_at)
    SELECT 'key_' || ${f.pad(account, 4)} || '_' || (i % ${KEYS_PER_ACCOUNT}), 'acct_' || ${f.pad(account, 4)},
      'key ' || (i % ${KEYS_PER_ACCOUNT}), 'hash_' || ${f.pad('i', 6)}, 'tg-live-...' || ${f.pad('i', 4)},
      'live', 'full', '[]', 0, ${createdAt}
    FROM numbers`;
}

/** Rows first..last of `rows`: row i is created at start + (i - 1) * span / rows. */
function ledgerSql(f: Flavor, first: number, last: number, rows: number, startMs: number, spanMs: number): string {
  const skewed = `((r_account - ${BIG_ACCOUNT_SHARE}) / ${1 - BIG_ACCOUNT_SHARE})`;
  let cumulative = 0;
  const endpointNo = ENDPOINTS.map(([, share], no) => `WHEN r_endpoint < ${(cumulative += share)} THEN ${no}`);
  const models = MODELS.map(
    ([name, provider, input, output], no) => `(${no}, '${name}', '${provider}', ${input}, ${output})`,
  );
  const endpoints = ENDPOINTS.map(([path, , prefix], no) => `(${no}, '${path}', ${prefix ? `'${prefix}'` : 'NULL'})`);
  const cost = 'input_tokens * input_nano + output_tokens * output_nano';
  const debit = (expr: string) => `CASE WHEN topup THEN NULL ELSE ${expr} END`;
  return `WITH RECURSIVE
    numbers(i) AS (${f.numbers(first, last)}),
    draws AS MATERIALIZED (
      SELECT i, ${['r_account', 'r_key', 'r_model', 'r_endpoint', 'r_kind', 'r_input', 'r_output', 'r_latency']
        .map((name) => `${f.uniform} AS ${name}`)
        .join(', ')}
      FROM numbers),
    shaped AS (
      SELECT i, r_latency,
        CASE WHEN r_account < ${BIG_ACCOUNT_SHARE} THEN 0 ELSE 1 + ${f.int(`${ACCOUNTS - 1} * ${skewed} * ${skewed}`)} END AS account_no,
        ${f.int(`r_key * ${KEYS_PER_ACCOUNT}`)} AS key_no,
        CASE ${endpointNo.join(' ')} ELSE ${ENDPOINTS.length - 1} END AS endpoint_no,
        r_kind < ${TOPUP_SHARE} AS topup,
        10 + ${f.int('r_input * r_input * 4000')} AS input_tokens,
        r_output, r_model
      FROM draws),
    requests AS (
      SELECT shaped.*,
        CASE WHEN endpoint_no = ${EMBEDDINGS} THEN ${EMBEDDING_MODEL} ELSE ${f.int(`${EMBEDDING_MODEL} * r_model * r_model`)} END AS model_no,
        CASE WHEN endpoint_no = ${EMBEDDINGS} THEN 0 ELSE 1 + ${f.int('r_output * 1000')} END AS output_tokens,
        endpoint_no <> ${EMBEDDINGS} AND key_no < 3 AS streamed,
        80 + ${f.int('r_latency * r_latency * 8000')} AS latency_ms
      FROM shaped),
    models(model_no, name, provider, input_nano, output_nano) AS (VALUES ${models.join(', ')}),
    endpoints(endpoint_no, path, answer_prefix) AS (VALUES ${endpoints.join(', ')})
  INSERT INTO ledger (id, account_id, kind, amount_nano, balance_after_nano, request_id, key_id, model, prompt_tokens,
    completion_tokens, note, created_at, billing, endpoint, answer_id, detail)
  SELECT 'led_' || ${f.pad('i', 12)},
    'acct_' || ${f.pad('account_no', 4)},
    CASE WHEN topup THEN 'topup' ELSE 'debit' END,
    CASE WHEN topup THEN 10000000000 ELSE -(${cost}) END,
    1000000000000 + i,
    ${debit(`'req_' || ${f.hex}`)},
    ${debit(`'key_' || ${f.pad('account_no', 4)} || '_' || key_no`)},
    ${debit('name')},
    ${debit('input_tokens')},
    ${debit('output_tokens')},
    CASE WHEN topup THEN 'top-up' END,
    ${startMs} + (i - 1) * ${spanMs} / ${rows},
    ${debit(`'{"tokens":{"input":' || input_tokens || ',"output":' || output_tokens || '},"prices":{"input":"' || input_nano || '","output":"' || output_nano || '"},"cost_nano":"' || (${cost}) || '"}'`)},
    ${debit('path')},
    ${debit(`answer_prefix || ${f.hex}`)},
    ${debit(`'{"provider":"' || provider || '","latency_ms":' || latency_ms || ',"first_token_ms":' || CASE WHEN streamed THEN (30 + ${f.int('r_latency * 600')}) || '' ELSE 'null' END || ',"finish_reason":"stop","streamed":' || CASE WHEN streamed THEN 'true' ELSE 'false' END || ',"cancelled":false}'`)}
  FROM requests JOIN models USING (model_no) JOIN endpoints USING (endpoint_no)`;
}
