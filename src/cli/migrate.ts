/** What `tollgate migrate` does (the command is in program.ts). */
import { loadConfig } from '../config/index.js';
import { migrateStorage } from '../storage/index.js';
import { print } from './output.js';

export async function migrate(): Promise<void> {
  const config = loadConfig();
  const { dialect, applied } = await migrateStorage({
    dataDir: config.storage.data_dir,
    databaseUrl: config.storage.database_url,
  });
  print(
    applied.length
      ? `Applied to the ${dialect} database: ${applied.join(', ')}`
      : `The ${dialect} database is up to date`,
  );
}
