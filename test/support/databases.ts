/** Real databases for tests: a fresh SQLite file per test, a fresh PostgreSQL database per test. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach } from 'vitest';
import { openStorage, type Storage } from '../../src/storage/index.js';

export const PG_ADMIN_URL = process.env.TOLLGATE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface TestDatabase {
  dialect: 'sqlite' | 'postgres';
  dataDir: string;
  databaseUrl: string | undefined;
  /**
   * Waits (at most `timeoutMs`) until no session is open on the database, and returns how many still are: sessions
   * closing, or left by a killed process, end on their own, and a COMMIT they had sent still lands.
   */
  untilSessionsEnd(timeoutMs: number): Promise<number>;
  /** Drops the database once its sessions have ended (or, after 2 s, ends them). */
  drop(): Promise<void>;
}

export function tempDir(prefix = 'tollgate-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export async function createTestDatabase(dialect: 'sqlite' | 'postgres'): Promise<TestDatabase> {
  const dataDir = tempDir();
  if (dialect === 'sqlite') {
    return {
      dialect,
      dataDir,
      databaseUrl: undefined,
      untilSessionsEnd: () => Promise.resolve(0),
      drop: () => Promise.resolve(rmSync(dataDir, { recursive: true, force: true })),
    };
  }
  const name = `tg_test_${process.pid}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  const untilSessionsEnd = async (timeoutMs: number): Promise<number> => {
    const client = new pg.Client({ connectionString: PG_ADMIN_URL });
    await client.connect();
    try {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const { rows } = await client.query<{ open: number }>(
          'SELECT count(*)::int AS open FROM pg_stat_activity WHERE datname = $1',
          [name],
        );
        if (rows[0]!.open === 0 || Date.now() >= deadline) return rows[0]!.open;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    } finally {
      await client.end();
    }
  };
  return {
    dialect,
    dataDir,
    databaseUrl: url.toString(),
    untilSessionsEnd,
    drop: async () => {
      rmSync(dataDir, { recursive: true, force: true });
      // A client still closing would get FATAL 57P01 from a forced drop, an error nobody listens for any more.
      await untilSessionsEnd(2_000);
      const client = new pg.Client({ connectionString: PG_ADMIN_URL });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

export const DIALECTS = ['sqlite', 'postgres'] as const;

/**
 * The money writers' configurations: SQLite with and without the ledger journal (which keeps batches as JSON before
 * SQLite has them), and PostgreSQL. Cases for `describeEach`: `(dialect, ledgerJournal)`.
 */
export const LEDGER_CONFIGURATIONS: ReadonlyArray<readonly [(typeof DIALECTS)[number], boolean]> = DIALECTS.flatMap(
  (dialect) => (dialect === 'sqlite' ? [false, true] : [false]).map((journal) => [dialect, journal] as const),
);

/**
 * For a suite over LEDGER_CONFIGURATIONS: the returned `open()` makes a fresh database and storage holding one
 * account, `acct_1` (a@example.com, plan `free`), credited `grantNano` as its sign-up grant. Whatever a test opened
 * is closed and dropped after it.
 */
export function storageWithAccount(
  dialect: (typeof DIALECTS)[number],
  ledgerJournal: boolean,
  grantNano = 0n,
): () => Promise<Storage> {
  let database: TestDatabase | undefined;
  let storage: Storage | undefined;
  afterEach(async () => {
    await storage?.close();
    await database?.drop();
    storage = database = undefined;
  });
  return async () => {
    database = await createTestDatabase(dialect);
    storage = await openStorage({ dataDir: database.dataDir, databaseUrl: database.databaseUrl, ledgerJournal });
    await storage.ledger.createAccount({
      id: 'acct_1',
      email: 'a@example.com',
      plan: 'free',
      settings: '{}',
      grantNano,
    });
    return storage;
  };
}
