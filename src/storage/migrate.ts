import { Migrator, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import type { Database } from './schema.js';
import * as initial from './migrations/001_initial.js';
import * as webhooks from './migrations/002_webhooks.js';
import * as dashboard from './migrations/003_dashboard.js';
import * as idempotency from './migrations/004_idempotency.js';
import * as emailVerification from './migrations/005_email_verification.js';
import * as webhookFairClaim from './migrations/006_webhook_fair_claim.js';
import * as creditPurchases from './migrations/007_credit_purchases.js';
import * as cardRecharges from './migrations/008_card_recharges.js';
import * as paymentReversals from './migrations/009_payment_reversals.js';

/** Migrations are compiled in, so `dist/` needs no migration folder at run time. */
const MIGRATIONS: Record<string, Migration> = {
  '001_initial': initial,
  '002_webhooks': webhooks,
  '003_dashboard': dashboard,
  '004_idempotency': idempotency,
  '005_email_verification': emailVerification,
  '006_webhook_fair_claim': webhookFairClaim,
  '007_credit_purchases': creditPurchases,
  '008_card_recharges': cardRecharges,
  '009_payment_reversals': paymentReversals,
};

const provider: MigrationProvider = { getMigrations: async () => MIGRATIONS };

/**
 * Applies pending migrations. Kysely's migrator holds a lock for the whole run (pg_advisory_lock on PostgreSQL),
 * so replicas starting together on one database apply each migration exactly once.
 */
export async function migrateToLatest(db: Kysely<Database>): Promise<string[]> {
  // 002 was merged after 003: a database that already has 003 still gets 002.
  const migrator = new Migrator({ db, provider, allowUnorderedMigrations: true });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** Applies migrations up to and including `name` (tests of a migration start from the schema before it). */
export async function migrateTo(db: Kysely<Database>, name: string): Promise<void> {
  const { error } = await new Migrator({ db, provider, allowUnorderedMigrations: true }).migrateTo(name);
  if (error) throw error instanceof Error ? error : new Error(String(error));
}

/** Names of the migrations not yet applied to this database (`tollgate doctor`). */
export async function pendingMigrations(db: Kysely<Database>): Promise<string[]> {
  const migrations = await new Migrator({ db, provider, allowUnorderedMigrations: true }).getMigrations();
  return migrations.filter((m) => m.executedAt === undefined).map((m) => m.name);
}
