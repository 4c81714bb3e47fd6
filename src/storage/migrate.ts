// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the migrator works on any schema
import { Migrator, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import * as initial from './migrations/001_initial.js';

/** Migrations are compiled in, so `dist/` needs no migration folder at run time. */
const MIGRATIONS: Record<string, Migration> = {
  '001_initial': initial,
};

const provider: MigrationProvider = { getMigrations: async () => MIGRATIONS };

/**
 * Applies pending migrations. Kysely's migrator holds a lock for the whole run (pg_advisory_lock on PostgreSQL),
 * so replicas starting together on one database apply each migration exactly once.
 */
export async function migrateToLatest(db: Kysely<any>): Promise<string[]> {
  const migrator = new Migrator({ db, provider });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
