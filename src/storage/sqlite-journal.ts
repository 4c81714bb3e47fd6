/**
 * The embedded gateway's charges, made durable by one append to a journal file instead of one SQLite transaction
 * each. A SQLite commit of one request is a score of system calls on the event loop (a header and a page for each
 * of its WAL frames, and the WAL-index locks; counted in docs/performance.md); an append is one. Both leave the
 * data in the OS's page cache (the database runs with `synchronous = NORMAL`), so a charge survives a crash of the
 * process either way.
 *
 * Every APPLY_MS the journaled batches are written to SQLite in one transaction, together with the sequence
 * number of the last one (`meta`), and the journal is emptied. At start-up, batches the database has not seen
 * are written before anything else reads it. Any query through Kysely first applies what is pending, so every
 * read sees every charge that was confirmed.
 *
 * Balances for planning come from memory, seeded from the database when nothing is pending, and dropped when
 * another connection (the CLI, a second gateway) has committed: `PRAGMA data_version`, asked at most every 5 ms.
 * The database stays the truth: a batch is planned again against it when applied, so a change another process
 * writes between a batch's confirmation and its apply is not lost; only that batch's returned figures could then
 * differ from what is stored.
 */
import { closeSync, existsSync, ftruncateSync, openSync, readFileSync, writeSync } from 'node:fs';
import SQLite, { type Database as SqliteDatabase, type Statement } from 'better-sqlite3';
import {
  accountsOf,
  planBatch,
  withBuiltDeliveries,
  type AccountBalance,
  type CommitResult,
  type NewAccount,
  type WriteBatch,
} from './batch.js';
import type { MoneyWriter } from './ledger.js';
import { ensurePrivateFile, PRIVATE_FILE_MODE } from './private-files.js';
import type { SqliteWriter, StampedBatch } from './sqlite-writer.js';
import { errorCode } from './unavailable.js';

/** How long a confirmed charge may wait in the journal before SQLite has it (docs/adr/0037-money-writers-outside-kysely.md). */
export const APPLY_MS = 20;
/** How often, at most, a batch asks SQLite whether another connection has committed (`PRAGMA data_version`). */
export const VERSION_CHECK_MS = 5;
/** The journal's name, next to `tollgate.db`. */
export const JOURNAL_FILE = 'ledger.journal';
/** The `meta` key holding the sequence number of the last journaled batch SQLite has. */
export const APPLIED_KEY = 'ledger_journal_applied';

/** One journaled batch, numbered. */
export interface JournalRecord extends StampedBatch {
  seq: number;
}

/** Another process (a second gateway on the same data directory) holds the journal: it must write directly. */
export class JournalInUseError extends Error {
  constructor(file: string) {
    super(`${file} is in use by another process`);
  }
}

export class SqliteJournal implements MoneyWriter {
  private readonly lock: SqliteDatabase;
  private readonly fd: number;
  private size: number;
  private seq: number;
  private pending: JournalRecord[] = [];
  private readonly balances = new Map<string, AccountBalance>();
  private readonly dataVersion: Statement<[], bigint>;
  private seenVersion: bigint;
  private versionCheckedAt = 0;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  /**
   * Opens (or creates) the journal and writes what it holds that SQLite lacks. `onError` hears of an apply that
   * failed (the batches stay in the journal and are tried again).
   */
  constructor(
    private readonly sqlite: SqliteDatabase,
    private readonly writer: SqliteWriter,
    file: string,
    private readonly onError: (error: unknown) => void = () => {},
    private readonly applyMs = APPLY_MS,
  ) {
    this.lock = lockJournal(file);
    this.dataVersion = sqlite.prepare<[], bigint>('PRAGMA data_version').pluck();
    this.seenVersion = this.dataVersion.get()!;
    const applied = Number(writer.metaValue(APPLIED_KEY) ?? 0);
    const records = existsSync(file) ? readJournal(readFileSync(file, 'utf8'), file) : [];
    const unseen = records.filter((r) => r.seq > applied);
    if (unseen.length > 0) writer.commitAll(unseen, APPLIED_KEY, String(unseen[unseen.length - 1]!.seq));
    this.seq = records.reduce((max, r) => Math.max(max, r.seq), applied);
    this.fd = openSync(file, 'a', PRIVATE_FILE_MODE);
    ftruncateSync(this.fd, 0);
    this.size = 0;
  }

  /** Plans the batch against the balances in memory, journals it, and returns what it moves. */
  commit(batch: WriteBatch): CommitResult {
    if (this.closed) throw new Error('the ledger journal is closed');
    // Its condition is judged on SQLite's rows, so it is written there at once, after what is pending.
    if (batch.purchasePaid || batch.rechargePaid || batch.paymentReversed || batch.whileBelow)
      return this.commitDirectly(batch);
    const at = Date.now();
    // Another connection (the CLI, a second gateway) committed since: plan on SQLite's balances, not on memory's.
    // Asked at most every VERSION_CHECK_MS: each asking is a read transaction, two `fcntl` calls.
    if (at - this.versionCheckedAt >= VERSION_CHECK_MS) {
      this.versionCheckedAt = at;
      const version = this.dataVersion.get()!;
      if (version !== this.seenVersion) {
        this.apply();
        this.seenVersion = version;
      }
    }
    const current = new Map<string, AccountBalance>();
    for (const accountId of accountsOf(batch)) current.set(accountId, this.balanceOf(accountId));
    const plan = planBatch(batch, current, undefined, at);
    const record: JournalRecord = { seq: this.seq + 1, at, batch: withBuiltDeliveries(batch, plan) };
    this.append(`${JSON.stringify(record, encodeBig)}\n`);
    this.seq = record.seq;
    this.pending.push(record);
    for (const [accountId, balance] of plan.result.balances) this.balances.set(accountId, balance);
    this.timer ??= setTimeout(() => this.applyQuietly(), this.applyMs).unref();
    return plan.result;
  }

  private commitDirectly(batch: WriteBatch): CommitResult {
    this.apply();
    try {
      return this.writer.commit(batch);
    } finally {
      for (const accountId of accountsOf(batch)) this.balances.delete(accountId);
    }
  }

  createAccount(account: NewAccount): void {
    this.apply();
    this.writer.createAccount(account);
  }

  /** Writes every journaled batch to SQLite in one transaction, then empties the journal. */
  apply(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.pending.length === 0) return;
    try {
      this.writer.commitAll(this.pending, APPLIED_KEY, String(this.seq));
    } finally {
      // SQLite's figures are the truth from here on (another process may have written to these accounts).
      this.balances.clear();
    }
    this.pending = [];
    ftruncateSync(this.fd, 0);
    this.size = 0;
  }

  /** Applies what is pending (before a read, on a timer); failures are reported and retried later. */
  applyQuietly(): void {
    // An audited change holds the connection's transaction open (storage/index.ts): apply after it.
    if (this.sqlite.inTransaction) {
      this.timer ??= setTimeout(() => this.applyQuietly(), this.applyMs).unref();
      return;
    }
    try {
      this.apply();
    } catch (error) {
      this.onError(error);
      this.timer ??= setTimeout(() => this.applyQuietly(), this.applyMs * 10).unref();
    }
  }

  /** Applies what is pending and closes the file (SQLite must still be open). */
  close(): void {
    if (this.closed) return;
    this.apply();
    this.closed = true;
    closeSync(this.fd);
    this.lock.close();
  }

  private balanceOf(accountId: string): AccountBalance {
    const known = this.balances.get(accountId);
    if (known) return known;
    // Only SQLite's figure plus nothing pending is a sound start.
    this.apply();
    const balance = this.writer.balance(accountId);
    if (!balance) throw new Error(`ledger entry for unknown account ${accountId}`);
    this.balances.set(accountId, balance);
    return balance;
  }

  /** One write of a whole line; a failed or short write is cut off again, so the file holds whole records only. */
  private append(line: string): void {
    const bytes = Buffer.from(line, 'utf8');
    let written = 0;
    try {
      while (written < bytes.length) written += writeSync(this.fd, bytes, written, bytes.length - written);
    } catch (error) {
      try {
        ftruncateSync(this.fd, this.size);
      } catch {
        // The next start-up ignores a torn last line.
      }
      throw error;
    }
    this.size += bytes.length;
  }
}

/**
 * One process owns a journal: another one replaying or emptying it would write its batches twice. The lock is an
 * exclusive SQLite transaction on `<journal>.lock`, held while the journal is open; the OS drops it with the process.
 */
function lockJournal(file: string): SqliteDatabase {
  // Private like the other data files (SQLite would create it with the process's umask).
  ensurePrivateFile(`${file}.lock`);
  const lock = new SQLite(`${file}.lock`);
  try {
    lock.pragma('busy_timeout = 0');
    // No `-journal` file of its own next to the lock; it never writes anything.
    lock.pragma('journal_mode = MEMORY');
    lock.pragma('locking_mode = EXCLUSIVE');
    lock.exec('BEGIN EXCLUSIVE');
    return lock;
  } catch (error) {
    lock.close();
    if (errorCode(error) === 'SQLITE_BUSY') throw new JournalInUseError(file);
    throw error;
  }
}

/** The records of a journal's text. A torn last line (a crash while appending) was never confirmed: skipped. */
export function readJournal(text: string, file: string): JournalRecord[] {
  const lines = text.split('\n');
  const records: JournalRecord[] = [];
  lines.forEach((line, index) => {
    if (line === '') return;
    try {
      records.push(JSON.parse(line, decodeBig) as JournalRecord);
    } catch (error) {
      const last = index === lines.length - 1;
      if (!last)
        throw new Error(`${file}: line ${index + 1} is not a journal record; refusing to start without its charges`, {
          cause: error,
        });
    }
  });
  return records;
}

function encodeBig(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? { $big: value.toString() } : value;
}

function decodeBig(_key: string, value: unknown): unknown {
  if (value !== null && typeof value === 'object' && '$big' in value && typeof value.$big === 'string')
    return BigInt(value.$big);
  return value;
}
