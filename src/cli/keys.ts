/** What `tollgate keys …` does (the commands and their options are in program.ts). */
import { operator, type KeyPatch, type NewKeyRequest } from '../admin/index.js';
import { invalidRequest } from '../errors/index.js';
import { renderKey } from '../http/render.js';
import type { Environment, KeyRecord, LimitReset, Permission } from '../storage/index.js';
import { withContext } from './context.js';
import { money, print, printFields, printJson, printTable, usdOption, when, type JsonOption } from './output.js';

/** The audit log's actor for changes made with the CLI. */
const CLI = operator(null, 'cli');

/** The governance flags of `keys create` and `keys update`; "none" clears one on update. */
export interface KeyGovernanceOptions {
  name?: string;
  limit?: string;
  spendLimit?: string;
  limitReset?: string;
  expiresAt?: string;
  rpm?: string;
  tpm?: string;
  allowedIps?: string;
}

export interface CreateKeyOptions extends JsonOption, KeyGovernanceOptions {
  account: string;
  env: Environment;
  permissions: Permission;
  models?: string;
}

export function createKey(options: CreateKeyOptions): Promise<void> {
  return withContext(async (ctx) => {
    const request: NewKeyRequest = {
      environment: options.env,
      permissions: options.permissions,
      ...(options.models ? { models: list(options.models) } : {}),
      ...governance(options),
    };
    const { record, key } = await ctx.admin.createKey(options.account, request, CLI);
    if (options.json) return printJson({ ...renderKey(record), key });
    printFields([...keyFields(record), ['API key', key]]);
    print('', 'The API key is shown once: store it now, it cannot be shown again.');
  });
}

export interface UpdateKeyOptions extends JsonOption, KeyGovernanceOptions {}

export function updateKey(keyId: string, options: UpdateKeyOptions): Promise<void> {
  return withContext(async (ctx) => {
    const patch = governance(options);
    if (!Object.keys(patch).length)
      throw invalidRequest(
        'nothing to update: give --name, --limit, --limit-reset, --expires-at, --rpm, --tpm or --allowed-ips',
      );
    const record = await ctx.admin.updateKey(keyId, patch, CLI);
    if (options.json) return printJson(renderKey(record));
    printFields(keyFields(record));
  });
}

export interface ListKeysOptions extends JsonOption {
  account: string;
}

export function listKeys(options: ListKeysOptions): Promise<void> {
  return withContext(async (ctx) => {
    const { keys } = await ctx.admin.getAccount(options.account);
    if (options.json) return printJson({ object: 'list', data: keys.map((key) => renderKey(key)) });
    printKeys(keys);
  });
}

export function revokeKey(keyId: string, options: JsonOption): Promise<void> {
  return withContext(async (ctx) => {
    const record = await ctx.admin.revokeKey(keyId, CLI);
    if (options.json) return printJson(renderKey(record));
    print(`Revoked ${record.id} (${record.hint}) of account ${record.accountId}`);
  });
}

export function printKeys(keys: KeyRecord[]): void {
  printTable(
    ['ID', 'NAME', 'HINT', 'ENV', 'PERMISSIONS', 'SPENT', 'LIMIT', 'EXPIRES', 'LAST USED', 'STATUS'],
    keys.map((k) => [
      k.id,
      k.name,
      k.hint,
      k.environment,
      k.permissions + (k.models.length ? ` (${k.models.join(', ')})` : ''),
      money(k.spentNano),
      limitText(k),
      k.expiresAt === null ? '-' : when(k.expiresAt),
      when(k.lastUsedAt),
      k.revokedAt === null ? 'active' : `revoked ${when(k.revokedAt)}`,
    ]),
  );
}

function keyFields(record: KeyRecord): Array<[string, string]> {
  const optional = (label: string, value: string | null): Array<[string, string]> =>
    value === null ? [] : [[label, value]];
  return [
    ['Key id', record.id],
    ['Account', record.accountId],
    ['Name', record.name],
    ['Environment', record.environment],
    ['Permissions', record.permissions],
    ...optional('Models', record.models.length ? record.models.join(', ') : null),
    ...optional('Limit', record.spendLimitNano === null ? null : limitText(record)),
    ...optional('Expires', record.expiresAt === null ? null : new Date(record.expiresAt).toISOString()),
    ...optional('Requests/minute', record.requestsPerMinute === null ? null : String(record.requestsPerMinute)),
    ...optional('Tokens/minute', record.tokensPerMinute === null ? null : String(record.tokensPerMinute)),
    ...optional('Allowed IPs', record.allowedIps.length ? record.allowedIps.join(', ') : null),
  ];
}

function limitText(key: KeyRecord): string {
  if (key.spendLimitNano === null) return '-';
  return money(key.spendLimitNano) + (key.limitReset ? ` ${key.limitReset}` : '');
}

const list = (text: string) =>
  text
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);

const NONE = 'none';

/** The flags given, as the fields of the admin API; the checks are the admin service's, as for every path. */
function governance(options: KeyGovernanceOptions): KeyPatch {
  const patch: KeyPatch = {};
  if (options.name !== undefined) patch.name = options.name;
  if (options.limit !== undefined) patch.limit = options.limit === NONE ? null : usdOption(options.limit, 'limit');
  if (options.spendLimit !== undefined)
    patch.spend_limit = options.spendLimit === NONE ? null : usdOption(options.spendLimit, 'spend_limit');
  if (options.limitReset !== undefined)
    patch.limit_reset = options.limitReset === NONE ? null : (options.limitReset as LimitReset);
  if (options.expiresAt !== undefined)
    patch.expires_at = options.expiresAt === NONE || options.expiresAt === 'never' ? null : options.expiresAt;
  if (options.rpm !== undefined) patch.requests_per_minute = perMinute(options.rpm, 'requests_per_minute');
  if (options.tpm !== undefined) patch.tokens_per_minute = perMinute(options.tpm, 'tokens_per_minute');
  if (options.allowedIps !== undefined) patch.allowed_ips = options.allowedIps === NONE ? [] : list(options.allowedIps);
  return patch;
}

function perMinute(value: string, param: string): number | null {
  if (value === NONE) return null;
  if (!/^\d+$/.test(value)) throw invalidRequest(`${param} must be a positive whole number or "none"`, param);
  return Number(value);
}
