import { Command } from 'commander';
import type { NewKeyRequest } from '../admin/index.js';
import { renderKey } from '../http/render.js';
import type { Environment, KeyRecord, Permission } from '../storage/index.js';
import { withContext } from './context.js';
import { money, print, printFields, printJson, printTable, usdOption, when } from './output.js';

interface CreateOptions {
  account: string;
  name?: string;
  env?: string;
  permissions?: string;
  models?: string;
  spendLimit?: string;
  json?: boolean;
}

export function keysCommand(): Command {
  const keys = new Command('keys').description('Create, list and revoke API keys');

  keys
    .command('create')
    .description('Create an API key for an account (the full key is printed once)')
    .requiredOption('--account <id>', 'account id')
    .option('--name <name>', 'a label for the key')
    .option('--env <env>', 'live or test', 'live')
    .option('--permissions <permissions>', 'full, read_only or project', 'full')
    .option('--models <ids>', 'project keys: comma-separated model ids the key may use')
    .option('--spend-limit <usd>', 'project keys: the most this key may spend, in USD')
    .option('--json', 'print JSON (the admin API shape)')
    .action((options: CreateOptions) =>
      withContext(async (ctx) => {
        const request: NewKeyRequest = {
          environment: options.env as Environment,
          permissions: options.permissions as Permission,
          ...(options.name ? { name: options.name } : {}),
          ...(options.models
            ? {
                models: options.models
                  .split(',')
                  .map((m) => m.trim())
                  .filter(Boolean),
              }
            : {}),
          ...(options.spendLimit !== undefined ? { spend_limit: usdOption(options.spendLimit, 'spend_limit') } : {}),
        };
        const { record, key } = await ctx.admin.createKey(options.account, request);
        if (options.json) return printJson({ ...renderKey(record), key });
        printFields([
          ['Key id', record.id],
          ['Account', record.accountId],
          ['Name', record.name],
          ['Environment', record.environment],
          ['Permissions', record.permissions],
          ...(record.models.length ? [['Models', record.models.join(', ')] satisfies [string, string]] : []),
          ...(record.spendLimitNano !== null
            ? [['Spend limit', money(record.spendLimitNano)] satisfies [string, string]]
            : []),
          ['API key', key],
        ]);
        print('', 'The API key is shown once: store it now, it cannot be shown again.');
      }),
    );

  keys
    .command('list')
    .description("List an account's API keys (hints only, never full keys)")
    .requiredOption('--account <id>', 'account id')
    .option('--json', 'print JSON')
    .action((options: { account: string; json?: boolean }) =>
      withContext(async (ctx) => {
        const { keys: list } = await ctx.admin.getAccount(options.account);
        if (options.json) return printJson({ object: 'list', data: list.map(renderKey) });
        printKeys(list);
      }),
    );

  keys
    .command('revoke')
    .description('Revoke an API key; requests with it fail from then on')
    .argument('<key-id>', 'key id (key_...)')
    .option('--json', 'print JSON (the admin API shape)')
    .action((keyId: string, options: { json?: boolean }) =>
      withContext(async (ctx) => {
        const record = await ctx.admin.revokeKey(keyId);
        if (options.json) return printJson(renderKey(record));
        print(`Revoked ${record.id} (${record.hint}) of account ${record.accountId}`);
      }),
    );

  return keys;
}

export function printKeys(keys: KeyRecord[]): void {
  printTable(
    ['ID', 'NAME', 'HINT', 'ENV', 'PERMISSIONS', 'SPENT', 'LIMIT', 'LAST USED', 'STATUS'],
    keys.map((k) => [
      k.id,
      k.name,
      k.hint,
      k.environment,
      k.permissions + (k.models.length ? ` (${k.models.join(', ')})` : ''),
      money(k.spentNano),
      k.spendLimitNano === null ? '-' : money(k.spendLimitNano),
      when(k.lastUsedAt),
      k.revokedAt === null ? 'active' : `revoked ${when(k.revokedAt)}`,
    ]),
  );
}
