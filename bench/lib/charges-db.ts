/**
 * The two databases of bench/charges.ts, migrated by the project's own migrations: a PostgreSQL database
 * (`tollgate_bench_charges` on TOLLGATE_BENCH_PG_URL's server) and a SQLite file in a fixed temporary directory, so
 * `--keep` can reuse them. `RawDb` talks to either without Kysely, for seeding, query plans and samples.
 */
import { existsSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import SQLite from 'better-sqlite3';
import pg from 'pg';
import { migrateStorage, type Dialect } from '../../src/storage/index.js';

export type { Dialect };

/** A server's maintenance database to connect to for CREATE / DROP DATABASE (trust auth). */
export const PG_ADMIN_URL = process.env.TOLLGATE_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const PG_DATABASE = 'tollgate_bench_charges';
const SQLITE_DIR = join(tmpdir(), 'tollgate-bench-charges');

/**
 * SQL sent as is: statements without parameters (`exec`, one at a time on PostgreSQL), a statement with
 * parameters (`run`) and queries (`all`).
 */
export interface RawDb {
  readonly dialect: Dialect;
  exec(sql: string): Promise<void>;
  run(sql: string, params: readonly unknown[]): Promise<void>;
  all(sql: string, params?: readonly unknown[]): Promise<Array<Record<string, unknown>>>;
  close(): Promise<void>;
}

/** Where one bench database lives: openStorage's options, and how to reach it raw. */
export interface BenchDatabase {
  readonly dialect: Dialect;
  readonly storageOptions: { dataDir: string; databaseUrl?: string };
  openRaw(): Promise<RawDb>;
  /** Bytes on disk: the ledger with its indexes (PostgreSQL), the database file (SQLite). */
  size(): Promise<number>;
  drop(): Promise<void>;
}

export function benchDatabase(dialect: Dialect): BenchDatabase {
  return dialect === 'postgres' ? postgresDatabase() : sqliteDatabase();
}

/** Whether the database exists and its ledger has `rows` rows (what `--keep` reuses). */
export async function holdsLedger(database: BenchDatabase, rows: number): Promise<boolean> {
  if (!(await exists(database))) return false;
  const raw = await database.openRaw();
  try {
    const [row] = await raw.all('SELECT count(*) AS n FROM ledger');
    return Number(row?.n) === rows;
  } catch {
    return false;
  } finally {
    await raw.close();
  }
}

/** Drops what was there and creates the database with every migration applied. */
export async function recreate(database: BenchDatabase): Promise<void> {
  await database.drop();
  if (database.dialect === 'postgres') await adminQuery(`CREATE DATABASE ${PG_DATABASE}`);
  await migrateStorage(database.storageOptions);
}

/**
 * SQLite: runs `task` on a database whose planner has no statistics (a ledger grown since it was last analyzed).
 * The rows of sqlite_stat1 and sqlite_stat4 are deleted, then written back; connections opened meanwhile see none.
 */
export async function withoutSqliteStatistics<T>(raw: RawDb, task: () => Promise<T>): Promise<T> {
  const tables = await raw.all("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'sqlite_stat%'");
  const saved = new Map<string, Array<Record<string, unknown>>>();
  for (const table of tables.map((row) => String(row.name))) {
    saved.set(table, await raw.all(`SELECT * FROM ${table}`));
    await raw.exec(`DELETE FROM ${table}`);
  }
  await raw.exec('ANALYZE sqlite_schema');
  try {
    return await task();
  } finally {
    for (const [table, rows] of saved)
      for (const row of rows) {
        const columns = Object.keys(row);
        await raw.run(
          `INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`,
          Object.values(row),
        );
      }
    await raw.exec('ANALYZE sqlite_schema');
  }
}

async function exists(database: BenchDatabase): Promise<boolean> {
  if (database.dialect === 'sqlite') return existsSync(join(SQLITE_DIR, 'tollgate.db'));
  const result = await adminQuery(`SELECT 1 FROM pg_database WHERE datname = '${PG_DATABASE}'`);
  return result.rowCount === 1;
}

function postgresDatabase(): BenchDatabase {
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${PG_DATABASE}`;
  const databaseUrl = url.toString();
  return {
    dialect: 'postgres',
    storageOptions: { dataDir: SQLITE_DIR, databaseUrl },
    openRaw: async () => {
      const client = new pg.Client({ connectionString: databaseUrl });
      await client.connect();
      return {
        dialect: 'postgres',
        exec: async (sql) => void (await client.query(sql)),
        run: async (sql, params) => void (await client.query(sql, [...params])),
        all: async (sql, params = []) => (await client.query(sql, [...params])).rows as Array<Record<string, unknown>>,
        close: () => client.end(),
      };
    },
    size: async () => {
      const result = await adminQuery(`SELECT pg_database_size('${PG_DATABASE}') AS bytes`);
      return Number((result.rows[0] as { bytes: string }).bytes);
    },
    drop: async () => void (await adminQuery(`DROP DATABASE IF EXISTS ${PG_DATABASE} WITH (FORCE)`)),
  };
}

function sqliteDatabase(): BenchDatabase {
  const file = join(SQLITE_DIR, 'tollgate.db');
  return {
    dialect: 'sqlite',
    storageOptions: { dataDir: SQLITE_DIR },
    openRaw: () => {
      const sqlite = new SQLite(file);
      sqlite.defaultSafeIntegers(true);
      return Promise.resolve({
        dialect: 'sqlite',
        exec: (sql) => Promise.resolve(void sqlite.exec(sql)),
        run: (sql, params) => Promise.resolve(void sqlite.prepare(sql).run(...params)),
        all: (sql, params = []) =>
          Promise.resolve(sqlite.prepare(sql).all(...params) as Array<Record<string, unknown>>),
        close: () => Promise.resolve(void sqlite.close()),
      });
    },
    size: () => Promise.resolve(existsSync(file) ? statSync(file).size : 0),
    drop: () => Promise.resolve(rmSync(SQLITE_DIR, { recursive: true, force: true })),
  };
}

async function adminQuery(sql: string): Promise<pg.QueryResult> {
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  try {
    return await admin.query(sql);
  } finally {
    await admin.end();
  }
}
