import { Command } from 'commander';
import { loadConfig } from '../config/index.js';
import { migrateStorage } from '../storage/index.js';
import { print } from './output.js';

export function startCommand(): Command {
  return new Command('start')
    .description(
      'Run the gateway server (the same as `npm start`; configured by tollgate.config.yaml and the environment)',
    )
    .action(async () => {
      const { main } = await import('../main.js');
      await main();
    });
}

export function migrateCommand(): Command {
  return new Command('migrate')
    .description('Apply pending database migrations (the server also applies them when it starts)')
    .action(async () => {
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
    });
}
