/** What `tollgate keys …` does (the commands and their options are in program.ts). */
import type { NewKeyRequest } from '../admin/index.js';
import { renderKey } from '../http/render.js';
import type { Environment, KeyRecord, Permission } from '../storage/index.js';
import { withContext } from './context.js';
import { money, print, printFields, printJson, printTable, usdOption, when, type JsonOption } from './output.js';

export interface CreateKeyOptions extends JsonOption {
  account: string;
  name?: string;
  env: Environment;
  permissions: Permission;
  models?: string;
  spendLimit?: string;
}

export function createKey(options: CreateKeyOptions): Promise<void> {
  return withContext(async (ctx) => {
    const request: NewKeyRequest = {
      environment: options.env,
      permissions: options.permissions,
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
  });
}

export interface ListKeysOptions extends JsonOption {
  account: string;
}

export function listKeys(options: ListKeysOptions): Promise<void> {
  return withContext(async (ctx) => {
    const { keys } = await ctx.admin.getAccount(options.account);
    if (options.json) return printJson({ object: 'list', data: keys.map(renderKey) });
    printKeys(keys);
  });
}

export function revokeKey(keyId: string, options: JsonOption): Promise<void> {
  return withContext(async (ctx) => {
    const record = await ctx.admin.revokeKey(keyId);
    if (options.json) return printJson(renderKey(record));
    print(`Revoked ${record.id} (${record.hint}) of account ${record.accountId}`);
  });
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
