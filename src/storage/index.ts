/**
 * Storage's public face: one Kysely database (SQLite or PostgreSQL) and the stores over it. Dialect
 * differences stay inside this folder.
 */
import { sql } from 'kysely';
import { AccountStore } from './accounts.js';
import { connect, type ConnectOptions, type Dialect } from './connect.js';
import { KeyStore } from './keys.js';
import { LedgerStore } from './ledger.js';
import { MetaStore } from './meta.js';
import { SqliteWriter } from './sqlite-writer.js';
import { migrateToLatest } from './migrate.js';
import { UsageStore } from './usage.js';

export type { Dialect } from './connect.js';
export type * from './records.js';
export type { LedgerEntryInput, WriteBatch, CommitResult, AccountBalance, UsageDelta, UsageSlot, InvoiceInput } from './batch.js';
export type { NewKey } from './keys.js';
export type { DailyUsageRow } from './usage.js';
export { encodeSettings } from './accounts.js';
export { newId } from './values.js';

export interface Storage {
  readonly dialect: Dialect;
  readonly accounts: AccountStore;
  readonly keys: KeyStore;
  readonly ledger: LedgerStore;
  readonly usage: UsageStore;
  readonly meta: MetaStore;
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Applies pending migrations and reports their names (the CLI's `migrate`; openStorage does the same silently). */
export async function migrateStorage(options: ConnectOptions): Promise<{ dialect: Dialect; applied: string[] }> {
  const { db, dialect } = connect(options);
  try {
    return { dialect, applied: await migrateToLatest(db) };
  } finally {
    await db.destroy();
  }
}

export async function openStorage(options: ConnectOptions & { migrate?: boolean }): Promise<Storage> {
  const { db, dialect, sqlite } = connect(options);
  try {
    if (options.migrate !== false) await migrateToLatest(db);
  } catch (error) {
    await db.destroy();
    throw error;
  }
  return {
    dialect,
    accounts: new AccountStore(db),
    keys: new KeyStore(db),
    ledger: new LedgerStore(db, dialect, sqlite ? new SqliteWriter(sqlite) : undefined),
    usage: new UsageStore(db),
    meta: new MetaStore(db),
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    close: () => db.destroy(),
  };
}
