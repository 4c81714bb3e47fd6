/**
 * The command tree: names, options and help text. Each action imports its implementation when it runs, so `--help`
 * and every command load only the modules they use.
 */
import { Command, Option } from 'commander';
import { VERSION } from '../config/version.js';
import { PERMISSION_CHOICES, isPermission } from '../auth/permissions.js';
import { invalidRequest } from '../errors/index.js';
// The choices only, not the reports' face: --help loads no storage code.
import { FORMATS, GROUPINGS } from '../reports/usage-query.js';
import type { Environment, Permission } from '../storage/index.js';
import type { CreateAccountOptions, ListAccountsOptions, UpdateAccountOptions } from './accounts.js';
import type { AddCreditsOptions, ShowCreditsOptions } from './credits.js';
import type { GenerationOptions } from './generation.js';
import type { CreateKeyOptions, ListKeysOptions, UpdateKeyOptions } from './keys.js';
import type { ListModelsOptions } from './models.js';
import type { OpenApiOptions } from './openapi.js';
import type { JsonOption } from './output.js';
import type { RefundPurchaseOptions } from './purchases-refund.js';
import type { ListPurchasesOptions } from './purchases.js';
import type { UsageOptions } from './usage.js';

const LEDGER_ENTRIES = 20;

export function program(): Command {
  return new Command('tollgate')
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
    .addCommand(usageCommand())
    .addCommand(generationCommand())
    .addCommand(modelsCommand())
    .addCommand(configCommand())
    .addCommand(doctorCommand())
    .addCommand(openapiCommand());
}

function startCommand(): Command {
  return new Command('start')
    .description(
      'Run the gateway server (what `npm start` runs; configured by tollgate.config.yaml and the environment)',
    )
    .action(async () => (await import('../main.js')).main());
}

function migrateCommand(): Command {
  return new Command('migrate')
    .description('Apply pending database migrations (the server also applies them when it starts)')
    .action(async () => (await import('./migrate.js')).migrate());
}

function accountsCommand(): Command {
  const accounts = new Command('accounts').description('Create, list, show and update accounts');

  accounts
    .command('create')
    .description('Create an account with the sign-up grant and a first live API key')
    .requiredOption('--email <email>', 'email address of the account')
    .option('--plan <plan>', 'plan name (default: the configured default_plan)')
    .option('--json', 'print JSON (the admin API shape)')
    .action(async (options: CreateAccountOptions) => (await import('./accounts.js')).createAccount(options));

  accounts
    .command('list')
    .description('List accounts, oldest first')
    .option('--limit <n>', 'how many accounts (1 to 1000)', '100')
    .option('--after <id>', 'start after this account id (paging)')
    .option('--json', 'print JSON')
    .action(async (options: ListAccountsOptions) => (await import('./accounts.js')).listAccounts(options));

  accounts
    .command('show')
    .description('Show an account: balance, limits and API keys')
    .argument('<id>', 'account id')
    .option('--json', 'print JSON (the admin API shape)')
    .action(async (id: string, options: JsonOption) => (await import('./accounts.js')).showAccount(id, options));

  accounts
    .command('update')
    .description("Change an account's plan or its own limits (overriding the plan's)")
    .argument('<id>', 'account id')
    .option('--plan <plan>', 'move the account to this plan')
    .option('--rpm <n>', 'requests per minute, or "none" to use the plan\'s')
    .option('--tpm <n>', 'tokens per minute, or "none" to use the plan\'s')
    .option('--daily-limit <usd>', 'daily spend limit in USD, "none" for no limit, or "plan" to use the plan\'s')
    .option(
      '--invoice <usd>',
      'bill auto-recharges on a monthly invoice, at most this many USD a month; "none" ends invoice billing',
    )
    .option(
      '--auto-recharge <threshold:amount>',
      'recharge by <amount> USD when the balance falls below <threshold> USD; "off" turns it off',
    )
    .option('--json', 'print JSON (the admin API shape)')
    .action(async (id: string, options: UpdateAccountOptions) =>
      (await import('./accounts.js')).updateAccount(id, options),
    );

  return accounts;
}

function keysCommand(): Command {
  const keys = new Command('keys').description('Create, list, change and revoke API keys');
  /** The governance flags of create and update; on update, "none" removes one. */
  const governed = (command: Command, update: boolean) =>
    command
      .option('--name <name>', 'a label for the key')
      .option(
        '--limit <usd>',
        `the most the key may spend, in USD (per --limit-reset period)${update ? '; "none"' : ''}`,
      )
      .option('--spend-limit <usd>', 'former name of --limit')
      .option('--limit-reset <period>', 'when the limit starts again (UTC): daily, weekly, monthly or none')
      .option(
        '--expires-at <iso>',
        `when the key stops working (ISO 8601, e.g. 2027-01-31T00:00:00Z)${update ? '; "never"' : ''}`,
      )
      .option('--rpm <n>', `the key's own requests per minute, at most the account's${update ? '; "none"' : ''}`)
      .option('--tpm <n>', `the key's own tokens per minute, at most the account's${update ? '; "none"' : ''}`)
      .option(
        '--allowed-ips <cidrs>',
        `comma-separated CIDRs or addresses (IPv4, IPv6) the key may be used from${update ? '; "none": anywhere' : ''}`,
      )
      .option('--json', 'print JSON (the admin API shape)');

  governed(
    keys
      .command('create')
      .description('Create an API key for an account (the full key is printed once)')
      .requiredOption('--account <id>', 'account id')
      .option('--env <env>', 'live or test', environmentOption, 'live')
      .option('--permissions <permissions>', PERMISSION_CHOICES, permissionOption, 'full')
      .option('--models <ids>', 'project keys: comma-separated model ids the key may use'),
    false,
  ).action(async (options: CreateKeyOptions) => (await import('./keys.js')).createKey(options));

  governed(
    keys
      .command('update')
      .description("Change a key's name, limit, expiry, rate limits or allowed addresses")
      .argument('<key-id>', 'key id (key_...)'),
    true,
  ).action(async (keyId: string, options: UpdateKeyOptions) => (await import('./keys.js')).updateKey(keyId, options));

  keys
    .command('list')
    .description("List an account's API keys (hints only, never full keys)")
    .requiredOption('--account <id>', 'account id')
    .option('--json', 'print JSON')
    .action(async (options: ListKeysOptions) => (await import('./keys.js')).listKeys(options));

  keys
    .command('revoke')
    .description('Revoke an API key; requests with it fail from then on')
    .argument('<key-id>', 'key id (key_...)')
    .option('--json', 'print JSON (the admin API shape)')
    .action(async (keyId: string, options: JsonOption) => (await import('./keys.js')).revokeKey(keyId, options));

  return keys;
}

function environmentOption(value: string): Environment {
  if (value === 'live' || value === 'test') return value;
  throw invalidRequest('environment must be live or test', 'environment');
}

function permissionOption(value: string): Permission {
  if (isPermission(value)) return value;
  throw invalidRequest(`permissions must be ${PERMISSION_CHOICES}`, 'permissions');
}

function creditsCommand(): Command {
  const credits = new Command('credits').description('Add credits to an account and show its ledger');

  credits
    .command('add')
    .description('Top up an account; a negative amount is a correction (never below a zero balance)')
    .requiredOption('--account <id>', 'account id')
    .requiredOption('--amount <usd>', 'USD amount, at most 9 decimals (negative for a correction)')
    .option('--note <text>', 'a note stored on the ledger entry')
    .option('--json', 'print JSON (the admin API shape)')
    .action(async (options: AddCreditsOptions) => (await import('./credits.js')).addCredits(options));

  credits
    .command('show')
    .description(`Show an account's balance and its last ${LEDGER_ENTRIES} ledger entries`)
    .requiredOption('--account <id>', 'account id')
    .option('--json', 'print JSON')
    .action(async (options: ShowCreditsOptions) => (await import('./credits.js')).showCredits(options, LEDGER_ENTRIES));

  return credits;
}

function purchasesCommand(): Command {
  const purchases = new Command('purchases').description(
    "Show an account's credit purchases (Stripe Checkout) and refund one",
  );

  purchases
    .command('list')
    .description("List an account's purchases, newest first")
    .requiredOption('--account <id>', 'account id')
    .option('--limit <n>', 'how many', '20')
    .option('--json', 'print JSON (the admin API shape)')
    .action(async (options: ListPurchasesOptions) => (await import('./purchases.js')).listPurchases(options));

  purchases
    .command('refund <purchase>')
    .description(
      'Refund a paid purchase through Stripe and debit it from the balance (default: all that is left of it)',
    )
    .requiredOption('--account <id>', 'account id')
    .option('--amount <usd>', 'USD to refund (default: what is left of the purchase)')
    .option('--json', 'print JSON (the admin API shape)')
    .action(async (purchase: string, options: RefundPurchaseOptions) =>
      (await import('./purchases-refund.js')).refundPurchase(purchase, options),
    );

  return purchases;
}

function usageCommand(): Command {
  return new Command('usage')
    .description(
      "An account's charged requests over UTC days, one per request or summed per group (test keys' requests are not charged); json and csv print the same text as GET /v1/usage, streamed",
    )
    .requiredOption('--account <id>', 'account id')
    .option('--from <day>', 'first UTC day, YYYY-MM-DD (default: the 1st of this month)')
    .option('--to <day>', 'last UTC day, included (default: today)')
    .addOption(
      new Option('--group-by <grouping>', 'sum per day, model, key or endpoint (default: one row per request)').choices(
        GROUPINGS,
      ),
    )
    .addOption(new Option('--format <format>', 'table, or the export as json or csv').choices([...FORMATS, 'table']))
    .option('--json', 'the same as --format json')
    .action(async (options: UsageOptions) => (await import('./usage.js')).showUsage(options));
}

function generationCommand(): Command {
  return new Command('generation')
    .description(
      "One request's charge explained: model, provider, tokens by kind, cost and the prices applied, latency, how it ended",
    )
    .argument('<id>', "the answer's id, the request's x-request-id, or its ledger entry id (led_...)")
    .requiredOption('--account <id>', 'account id')
    .option('--json', 'print JSON (the GET /v1/generation shape)')
    .action(async (id: string, options: GenerationOptions) =>
      (await import('./generation.js')).showGeneration(id, options),
    );
}

function modelsCommand(): Command {
  const models = new Command('models')
    .description('List the model catalog with prices and status (inactive models need their provider configured)')
    .option('--active', 'only models whose provider is configured')
    .option('--json', 'print JSON (the /v1/models shape, with capabilities)')
    .action(async (options: ListModelsOptions) => (await import('./models.js')).listModels(options));

  models
    .command('check')
    .description(
      'Ask each configured provider for its model list and compare it with the catalog: catalog models it does not serve, and models it serves that the catalog lacks. Exits 1 when a catalog model is not served, 2 when a provider could not be asked',
    )
    .option('--json', 'print JSON: {ok, providers: [{provider, status, not_served, not_in_catalog, ...}]}')
    // `models` has its own --json, which commander gives to it: read both.
    .action(async (_options: JsonOption, command: Command) =>
      (await import('./models-check.js')).checkModels(command.optsWithGlobals<JsonOption>()),
    );

  return models;
}

function configCommand(): Command {
  const config = new Command('config').description('Check the configuration, or print its JSON Schema for editors');
  config
    .command('check')
    .description(
      'Load and validate the configuration (defaults, tollgate.config.yaml, environment); print the problem if any',
    )
    .option('--json', 'print the merged configuration in JSON (secrets hidden)')
    .action(async (options: JsonOption) => (await import('./config.js')).checkConfig(options));
  config
    .command('schema')
    .description('Print the JSON Schema of tollgate.config.yaml (for yaml-language-server and editors)')
    .action(async () => (await import('./config.js')).printConfigSchema());
  return config;
}

function doctorCommand(): Command {
  return new Command('doctor')
    .description(
      'Check the configuration, database, Redis, every configured provider and Stripe, and say what is wrong',
    )
    .option('--json', 'print JSON: {ok, checks: [{check, outcome, detail}]}')
    .action(async (options: JsonOption) => (await import('./doctor.js')).doctor(options));
}

function openapiCommand(): Command {
  return new Command('openapi')
    .description('Print the OpenAPI 3.1 document of the HTTP API (the one served at GET /v1/openapi.json)')
    .option('--markdown', 'print the API reference in Markdown instead')
    .action(async (options: OpenApiOptions) => (await import('./openapi.js')).printOpenApi(options));
}
