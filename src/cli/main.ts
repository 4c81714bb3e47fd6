#!/usr/bin/env node
/** `tollgate`: the admin API's actions run directly against the configured database, plus `start` and `migrate`. */
import { GatewayError } from '../errors/index.js';
import { program } from './program.js';

try {
  await program().parseAsync();
} catch (error) {
  process.stderr.write(`tollgate: ${await describe(error)}\n`);
  process.exitCode = 1;
}

async function describe(error: unknown): Promise<string> {
  if (error instanceof GatewayError) return error.param ? `${error.message} (param: ${error.param})` : error.message;
  // Imported only now so that `--help` does not load the configuration code; a ConfigError means it is loaded already.
  const { ConfigError } = await import('../config/index.js');
  if (error instanceof ConfigError) return error.message;
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}
