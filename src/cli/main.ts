#!/usr/bin/env node
/** `tollgate`: the admin API's actions run directly against the configured database, plus `start` and `migrate`. */
import { Command } from 'commander';
import { ConfigError, VERSION } from '../config/index.js';
import { GatewayError } from '../errors/index.js';
import { accountsCommand } from './accounts.js';
import { configCommand } from './config.js';
import { creditsCommand } from './credits.js';
import { doctorCommand } from './doctor.js';
import { keysCommand } from './keys.js';
import { modelsCommand } from './models.js';
import { openapiCommand } from './openapi.js';
import { purchasesCommand } from './purchases.js';
import { migrateCommand, startCommand } from './server.js';

const program = new Command('tollgate')
  .description(
    'OpenAI-compatible LLM gateway with prepaid USD credits.\nCommands other than start act directly on the database configured for the server (TOLLGATE_DATA_DIR, DATABASE_URL, TOLLGATE_CONFIG).',
  )
  .version(VERSION)
  .showHelpAfterError()
  .addCommand(startCommand())
  .addCommand(migrateCommand())
  .addCommand(accountsCommand())
  .addCommand(keysCommand())
  .addCommand(creditsCommand())
  .addCommand(purchasesCommand())
  .addCommand(modelsCommand())
  .addCommand(configCommand())
  .addCommand(doctorCommand())
  .addCommand(openapiCommand());

try {
  await program.parseAsync();
} catch (error) {
  process.stderr.write(`tollgate: ${describe(error)}\n`);
  process.exitCode = 1;
}

function describe(error: unknown): string {
  if (error instanceof GatewayError) return error.param ? `${error.message} (param: ${error.param})` : error.message;
  if (error instanceof ConfigError) return error.message;
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}
