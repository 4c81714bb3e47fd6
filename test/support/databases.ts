/** Real databases for tests: a fresh SQLite file per test, a fresh PostgreSQL database per test. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';

export const PG_ADMIN_URL = process.env.TOLLGATE_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface TestDatabase {
  dialect: 'sqlite' | 'postgres';
  dataDir: string;
  databaseUrl: string | undefined;
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
      drop: async () => rmSync(dataDir, { recursive: true, force: true }),
    };
  }
  const name = `tg_test_${process.pid}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    dialect,
    dataDir,
    databaseUrl: url.toString(),
    drop: async () => {
      rmSync(dataDir, { recursive: true, force: true });
      const client = new pg.Client({ connectionString: PG_ADMIN_URL });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await client.end();
    },
  };
}

export const DIALECTS = ['sqlite', 'postgres'] as const;
