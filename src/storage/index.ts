/**
 * Storage's public face: one Kysely database (SQLite or PostgreSQL) and the stores over it. Dialect
 * differences stay inside this folder.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { dirname, join } from 'node:path';
import type { Database as SQLiteDatabase } from 'better-sqlite3';
import { sql, type Kysely } from 'kysely';
import { AccountStore } from './accounts.js';
import { AuditStore } from './audit.js';
import { CONNECT_TIMEOUT_MS, analyzeIfUseful, connect, type ConnectOptions, type Dialect } from './connect.js';
import { IdempotencyStore } from './idempotency.js';
import { KeyStore } from './keys.js';
import { LedgerStore } from './ledger.js';
import { PgWriter } from './pg-writer.js';
import { InvitationStore } from './invitations.js';
import { MemberStore } from './members.js';
import { MetaStore } from './meta.js';
import { SqliteCheckpointer, WRITER_AUTOCHECKPOINT_PAGES } from './sqlite-checkpointer.js';
import { SqliteWriter } from './sqlite-writer.js';
import { JOURNAL_FILE, JournalInUseError, SqliteJournal } from './sqlite-journal.js';
import type { Exclusive, MoneyWriter } from './ledger.js';
import type { Database } from './schema.js';
import { migrateToLatest, pendingMigrations } from './migrate.js';
import { PurchaseStore } from './purchases.js';
import { RechargeStore } from './recharges.js';
import { ResponseStore } from './responses.js';
import { UsageStore } from './usage.js';
import { ChargeStore } from './charges.js';
import { UserStore } from './users.js';
import { WebhookStore } from './webhooks.js';

export type { Dialect } from './connect.js';
export type * from './records.js';
export type {
  LedgerEntryInput,
  WriteBatch,
  CommitResult,
  AccountBalance,
  UsageDelta,
  UsageSlot,
  InvoiceInput,
  EntryEvents,
  PurchasePaid,
  RechargePaid,
  PaymentReversed,
} from './batch.js';
export type {
  PurchaseRecord,
  PurchaseStatus,
  NewPurchase,
  PaymentCustomer,
  PurchaseStore,
  PaidPayment,
} from './purchases.js';
export type { RechargeRecord, RechargeStatus, RechargeStore } from './recharges.js';
export type { KeyChanges, NewKey } from './keys.js';
export type { Actor, AuditEntry, AuditPage, AuditRecord, AuditStore } from './audit.js';
export { periodEnd, periodOf, periodStartDay } from './periods.js';
export type { IdempotencyRecord, IdempotencyStore, NewClaim } from './idempotency.js';
export type { NewResponse, ResponseStore, StoredResponse } from './responses.js';
export type { DailyUsageRow } from './usage.js';
export type { ChargeCursor, ChargeGroup, ChargeGrouping, ChargeRange, ChargeStore } from './charges.js';
export type { DashboardSession, DashboardUser, EmailStatus, EmailVerification } from './users.js';
export type {
  WebhookRecord,
  WebhookEventSpec,
  WebhookChanges,
  RetryConfig,
  FilterValue,
  DeliveryRecord,
  DeliveryStatus,
  NewDelivery,
  AttemptResult,
} from './webhooks.js';
export type { ClaimCaps } from './webhook-claim.js';
export { encodeSettings } from './accounts.js';
export { newId, storedJson } from './values.js';
export { userIdOf } from './users.js';
export type { MemberStore } from './members.js';
export type { Invitation, InvitationStore } from './invitations.js';
export { isStorageUnavailable } from './unavailable.js';
export { JournalInUseError } from './sqlite-journal.js';

/** How long /ready's `select 1` may take: a new connection's timeout plus a little. */
const PING_TIMEOUT_MS = CONNECT_TIMEOUT_MS + 1_000;

/**
 * The stores whose changes the audit log records, over one transaction: a change and its audit entry are written
 * together or not at all. Money never moves here (the money writer does that, in its own transactions).
 */
export interface Changes {
  readonly accounts: AccountStore;
  readonly keys: KeyStore;
  readonly users: UserStore;
  readonly members: MemberStore;
  readonly invitations: InvitationStore;
  readonly webhooks: WebhookStore;
  readonly audit: AuditStore;
}

export interface Storage {
  readonly dialect: Dialect;
  readonly accounts: AccountStore;
  readonly keys: KeyStore;
  readonly ledger: LedgerStore;
  readonly usage: UsageStore;
  /** What requests were charged: one by id, pages in time order, sums by day, model, key or endpoint. */
  readonly charges: ChargeStore;
  readonly meta: MetaStore;
  /** Dashboard passwords and sessions. */
  readonly users: UserStore;
  /** Who belongs to which account, with which role. */
  readonly members: MemberStore;
  /** Invitations to join an account. */
  readonly invitations: InvitationStore;
  /** Webhook registrations and the delivery outbox. */
  readonly webhooks: WebhookStore;
  /** Idempotency keys of chat requests and their first answers. */
  readonly idempotency: IdempotencyStore;
  /** Credit purchases and customers at the payment processor. */
  readonly purchases: PurchaseStore;
  /** Auto-recharges charged to a saved card. */
  readonly recharges: RechargeStore;
  /** Responses API response ids, bound to their accounts (`previous_response_id`). */
  readonly responses: ResponseStore;
  /** Who changed what in an account (members, keys, limits, webhooks, settings, payments). */
  readonly audit: AuditStore;
  /**
   * Runs `work` on the stores of one transaction: committed when it resolves, rolled back when it throws. No money
   * moves inside it (`ledger` writes have their own transactions and are refused there).
   */
  atomically<T>(work: (changes: Changes) => Promise<T>): Promise<T>;
  /** Resolves when the database answers a trivial query; rejects within about 3 s otherwise. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** Applies pending migrations and reports their names (the CLI's `migrate`; openStorage does the same silently). */
export async function migrateStorage(options: ConnectOptions): Promise<{ dialect: Dialect; applied: string[] }> {
  // An explicit migration may wait on locks or rewrite large tables: no query timeout.
  const { db, dialect } = connect({ ...options, queryTimeoutMs: 0 });
  try {
    return { dialect, applied: await migrateToLatest(db) };
  } finally {
    await db.destroy();
  }
}

/** Connects without changing anything and lists the pending migrations (`tollgate doctor`). */
export async function inspectStorage(options: ConnectOptions): Promise<{ dialect: Dialect; pending: string[] }> {
  const { db, dialect } = connect(options);
  try {
    return { dialect, pending: await pendingMigrations(db) };
  } finally {
    await db.destroy();
  }
}

export interface OpenOptions extends ConnectOptions {
  migrate?: boolean;
  /** SQLite: the WAL checkpoint worker failed (the writer's own checkpoints go on). */
  onCheckpointError?: (error: unknown) => void;
  /**
   * SQLite: charges are made durable by an append to `ledger.journal` and written to SQLite every few ms
   * (`sqlite-journal.ts`). For the one gateway process that owns the data directory, not for the CLI.
   */
  ledgerJournal?: boolean;
  /** SQLite with `ledgerJournal`: writing the journal to SQLite failed (it is tried again). */
  onJournalError?: (error: unknown) => void;
}

/** SQLite: how often the planner's statistics are brought up to date (`analyzeIfUseful`). */
const ANALYZE_EVERY_MS = 3_600_000;

export async function openStorage(options: OpenOptions): Promise<Storage> {
  const { db, dialect, sqlite, pool, beforeQuery } = connect(options);
  const checkpointer = sqlite && new SqliteCheckpointer(sqlite.name, options.onCheckpointError);
  sqlite?.pragma(`wal_autocheckpoint = ${WRITER_AUTOCHECKPOINT_PAGES}`);
  try {
    if (options.migrate !== false) await migrateToLatest(db);
  } catch (error) {
    await db.destroy();
    throw error;
  }
  let journal: SqliteJournal | undefined;
  let writer: MoneyWriter;
  if (sqlite) {
    const sqliteWriter = new SqliteWriter(sqlite, () => checkpointer!.written());
    try {
      journal = options.ledgerJournal
        ? openJournal(sqlite, sqliteWriter, beforeQuery!, options.onJournalError)
        : undefined;
    } catch (error) {
      await checkpointer?.stop();
      await db.destroy();
      throw error;
    }
    writer = journal ?? sqliteWriter;
  } else writer = new PgWriter(pool!);
  // SQLite has one connection: an audited change's transaction (Kysely, with awaits between its statements) and the
  // money writer's synchronous transactions must not interleave, or a charge would be committed inside the change
  // and rolled back with it. Both take turns here; PostgreSQL's pool gives each its own connection.
  const exclusive = sqlite ? takingTurns() : undefined;
  const statistics = sqlite && setInterval(() => analyzeIfUseful(sqlite), ANALYZE_EVERY_MS).unref();
  return {
    dialect,
    accounts: new AccountStore(db),
    keys: new KeyStore(db),
    ledger: new LedgerStore(db, writer, exclusive),
    usage: new UsageStore(db),
    charges: new ChargeStore(db),
    meta: new MetaStore(db),
    users: new UserStore(db),
    members: new MemberStore(db),
    invitations: new InvitationStore(db),
    webhooks: new WebhookStore(db, dialect),
    idempotency: new IdempotencyStore(db),
    purchases: new PurchaseStore(db),
    recharges: new RechargeStore(db),
    responses: new ResponseStore(db),
    audit: new AuditStore(db),
    atomically: (work) => {
      // Work it left behind (timers, callbacks) keeps the context: `open` turns false when the change ends.
      const change = () => {
        const context = { open: true };
        return insideChange
          .run(context, () => db.transaction().execute((trx) => work(changesOver(trx, dialect))))
          .finally(() => (context.open = false));
      };
      return exclusive ? exclusive(change) : change();
    },
    ping: () => withTimeout(sql`select 1`.execute(db), PING_TIMEOUT_MS),
    close: async () => {
      clearInterval(statistics);
      journal?.close();
      await checkpointer?.stop();
      await db.destroy();
    },
  };
}

/** Set while an audited change runs: a money write started inside it would wait for it forever. */
const insideChange = new AsyncLocalStorage<{ open: boolean }>();

/** Runs the functions given to it one after another, each once the previous one's promise settled. */
function takingTurns(): Exclusive {
  let tail: Promise<unknown> = Promise.resolve();
  return <T>(write: () => T | Promise<T>): Promise<T> => {
    if (insideChange.getStore()?.open)
      return Promise.reject(
        new Error('a money write cannot run inside Storage.atomically (it has its own transaction)'),
      );
    const result = tail.then(write);
    tail = result.catch(() => undefined);
    return result;
  };
}

function changesOver(db: Kysely<Database>, dialect: Dialect): Changes {
  return {
    accounts: new AccountStore(db),
    keys: new KeyStore(db),
    users: new UserStore(db),
    members: new MemberStore(db),
    invitations: new InvitationStore(db),
    webhooks: new WebhookStore(db, dialect),
    audit: new AuditStore(db),
  };
}

/**
 * The ledger journal of `sqlite`'s directory, applied before every Kysely statement so that reads see every
 * confirmed charge. Undefined when another process holds it: this one then writes to SQLite directly, like the CLI.
 */
function openJournal(
  sqlite: SQLiteDatabase,
  writer: SqliteWriter,
  beforeQuery: { run: () => void },
  onError?: (error: unknown) => void,
): SqliteJournal | undefined {
  let journal: SqliteJournal;
  try {
    journal = new SqliteJournal(sqlite, writer, join(dirname(sqlite.name), JOURNAL_FILE), onError);
  } catch (error) {
    if (!(error instanceof JournalInUseError)) throw error;
    onError?.(error);
    return undefined;
  }
  // Never inside a transaction: the writer's own are synchronous and nest badly.
  beforeQuery.run = () => {
    if (!sqlite.inTransaction) journal.applyQuietly();
  };
  return journal;
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(Object.assign(new Error(`the database did not answer within ${ms} ms`), { code: 'ETIMEDOUT' })),
      ms,
    );
  });
  return Promise.race([promise.then(() => undefined), timeout]).finally(() => clearTimeout(timer));
}
