/** Opens the Kysely database: embedded SQLite (WAL) by default, PostgreSQL when a URL is given. */
import { join } from 'node:path';
import SQLite, { type Database as SQLiteDatabase } from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import pg from 'pg';
import { ensurePrivateDir, ensurePrivateFile, PRIVATE_FILE_MODE, tighten } from './private-files.js';
import type { Database } from './schema.js';

export type Dialect = 'sqlite' | 'postgres';

export interface Connection {
  db: Kysely<Database>;
  dialect: Dialect;
  /** The raw SQLite handle (SQLite only), for the synchronous money writer. */
  sqlite?: SQLite.Database;
  /** SQLite only: runs before every statement Kysely prepares (the ledger journal applies what is pending). */
  beforeQuery?: { run: () => void };
  /** The PostgreSQL pool (PostgreSQL only), for the money writer's multi-statement queries. */
  pool?: pg.Pool;
}

export interface ConnectOptions {
  dataDir: string;
  databaseUrl?: string | undefined;
  /** PostgreSQL pool size. */
  poolSize?: number;
  /** PostgreSQL: a query with no answer after this long fails (0: wait forever). Default 5 s. */
  queryTimeoutMs?: number;
}

/** PostgreSQL: how long a new connection may take before the attempt fails. */
export const CONNECT_TIMEOUT_MS = 2_000;

const INT8_OID = 20;

export function connect(options: ConnectOptions): Connection {
  if (options.databaseUrl) {
    const pool = new pg.Pool({
      connectionString: options.databaseUrl,
      max: options.poolSize ?? 10,
      // A database that is down or unreachable fails requests quickly (503) instead of holding them.
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      ...(options.queryTimeoutMs !== 0 ? { query_timeout: options.queryTimeoutMs ?? 5_000 } : {}),
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      // JIT compiling a usage export's aggregate took longer than running it (docs/adr/0063-every-charge-explained.md).
      options: '-c jit=off',
      types: {
        getTypeParser: (oid: number, format?: 'text' | 'binary'): ((value: string) => unknown) =>
          oid === INT8_OID
            ? (value: string) => BigInt(value)
            : (pg.types.getTypeParser(oid, format) as (value: string) => unknown),
      },
    });
    // A client losing its server must not crash the process: pg also emits 'error' on a checked-out client,
    // where the pool does not listen. The query in flight gets the error; the pool drops the dead client.
    pool.on('error', () => undefined);
    pool.on('connect', (client) => client.on('error', () => undefined));
    return { db: new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }), dialect: 'postgres', pool };
  }
  ensurePrivateDir(options.dataDir);
  const file = join(options.dataDir, 'tollgate.db');
  // SQLite gives the -wal and -shm files it creates the database file's mode.
  ensurePrivateFile(file);
  const sqlite = new SQLite(file);
  sqlite.pragma('journal_mode = WAL');
  for (const companion of [`${file}-wal`, `${file}-shm`]) tighten(companion, PRIVATE_FILE_MODE);
  sqlite.pragma('synchronous = NORMAL');
  sqlite.pragma('busy_timeout = 5000');
  sqlite.pragma('foreign_keys = ON');
  analyzeIfUseful(sqlite);
  sqlite.defaultSafeIntegers(true);
  const beforeQuery = { run: () => {} };
  const database = {
    close: () => sqlite.close(),
    prepare: (source: string) => {
      beforeQuery.run();
      return sqlite.prepare(source);
    },
  };
  return {
    db: new Kysely<Database>({ dialect: new SqliteDialect({ database }) }),
    dialect: 'sqlite',
    sqlite,
    beforeQuery,
  };
}

/**
 * Gathers the statistics SQLite's planner needs on a large ledger (without them a lookup by request id reads the
 * whole account): tables whose size changed much since they were last analyzed are analyzed, each on a sample.
 * Cheap when nothing changed; the gateway also runs it hourly (storage/index.ts).
 */
export function analyzeIfUseful(sqlite: SQLiteDatabase): void {
  sqlite.pragma('optimize = 0x10012');
}
