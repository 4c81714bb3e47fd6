import { Migrator, type Kysely, type MigrationProvider } from 'kysely';
import { messageOf } from '../errors/index.js';
import type { Database } from './schema.js';
import { MIGRATIONS } from './migrations/index.js';

const provider: MigrationProvider = { getMigrations: () => Promise.resolve(MIGRATIONS) };

/**
 * Applies pending migrations. Kysely's migrator holds a lock for the whole run (pg_advisory_lock on PostgreSQL),
 * so replicas starting together on one database apply each migration exactly once.
 */
export async function migrateToLatest(db: Kysely<Database>): Promise<string[]> {
  // 002 was merged after 003: a database that already has 003 still gets 002.
  const migrator = new Migrator({ db, provider, allowUnorderedMigrations: true });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(messageOf(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** Applies migrations up to and including `name` (tests of a migration start from the schema before it). */
export async function migrateTo(db: Kysely<Database>, name: string): Promise<void> {
  const { error } = await new Migrator({ db, provider, allowUnorderedMigrations: true }).migrateTo(name);
  if (error) throw error instanceof Error ? error : new Error(messageOf(error));
}

/** Names of the migrations not yet applied to this database (`tollgate doctor`). */
export async function pendingMigrations(db: Kysely<Database>): Promise<string[]> {
  const migrations = await new Migrator({ db, provider, allowUnorderedMigrations: true }).getMigrations();
  return migrations.filter((m) => m.executedAt === undefined).map((m) => m.name);
}
