/** What `tollgate accounts …` does (the commands and their options are in program.ts). */
import type { AccountPatch } from '../admin/index.js';
import { invalidRequest } from '../errors/index.js';
import { renderAccount, renderKey } from '../http/render.js';
import type { AccountRecord } from '../storage/index.js';
import { withContext, type CliContext } from './context.js';
import { printKeys } from './keys.js';
import { money, print, printFields, printJson, printTable, usdOption, when, type JsonOption } from './output.js';

export interface CreateAccountOptions extends JsonOption {
  email: string;
  plan?: string;
}

export function createAccount(options: CreateAccountOptions): Promise<void> {
  return withContext(async (ctx) => {
    const { account, key } = await ctx.admin.createAccount({
      email: options.email,
      ...(options.plan ? { plan: options.plan } : {}),
    });
    if (options.json) return printJson({ ...renderAccount(account, ctx), api_key: key.key, api_key_id: key.record.id });
    printFields([
      ['Account', account.id],
      ['Email', account.email],
      ['Plan', account.plan],
      ['Balance', money(account.balanceNano)],
      ['API key', key.key],
    ]);
    print('', 'The API key is shown once: store it now, it cannot be shown again.');
  });
}

export interface ListAccountsOptions extends JsonOption {
  limit: string;
  after?: string;
}

export function listAccounts(options: ListAccountsOptions): Promise<void> {
  return withContext(async (ctx) => {
    const limit = Number(options.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw invalidRequest('limit must be 1 to 1000', 'limit');
    const list = await ctx.admin.listAccounts({ limit, ...(options.after ? { after: options.after } : {}) });
    if (options.json) return printJson({ object: 'list', data: list.map((a) => renderAccount(a, ctx)) });
    printTable(
      ['ID', 'EMAIL', 'PLAN', 'BALANCE', 'CREATED'],
      list.map((a) => [a.id, a.email, a.plan, money(a.balanceNano), when(a.createdAt)]),
    );
  });
}

export function showAccount(id: string, options: JsonOption): Promise<void> {
  return withContext(async (ctx) => {
    const { account, keys } = await ctx.admin.getAccount(id);
    if (options.json) return printJson({ ...renderAccount(account, ctx), keys: keys.map(renderKey) });
    printAccount(account, ctx);
    print('', 'Keys:');
    printKeys(keys);
  });
}

export interface UpdateAccountOptions extends JsonOption {
  plan?: string;
  rpm?: string;
  tpm?: string;
  dailyLimit?: string;
  invoice?: string;
  autoRecharge?: string;
}

export function updateAccount(id: string, options: UpdateAccountOptions): Promise<void> {
  return withContext(async (ctx) => {
    const patch: AccountPatch = {};
    if (options.plan !== undefined) patch.plan = options.plan;
    if (options.rpm !== undefined) patch.requests_per_minute = perMinute(options.rpm, 'requests_per_minute');
    if (options.tpm !== undefined) patch.tokens_per_minute = perMinute(options.tpm, 'tokens_per_minute');
    if (options.dailyLimit !== undefined) patch.daily_limit = dailyLimit(options.dailyLimit);
    if (options.invoice !== undefined)
      patch.billing =
        options.invoice === 'none'
          ? null
          : { processor: 'invoice', monthly_ceiling: usdOption(options.invoice, 'billing.monthly_ceiling') };
    if (options.autoRecharge !== undefined) patch.auto_recharge = autoRecharge(options.autoRecharge);
    if (!Object.keys(patch).length)
      throw invalidRequest('nothing to update: give --plan, --rpm, --tpm, --daily-limit, --invoice or --auto-recharge');
    const account = await ctx.admin.updateAccount(id, patch);
    if (options.json) return printJson(renderAccount(account, ctx));
    printAccount(account, ctx);
  });
}

function printAccount(account: AccountRecord, ctx: CliContext): void {
  const limits = ctx.limitsFor(account);
  const { settings } = account;
  const { autoRecharge } = settings;
  const own = (set: boolean) => (set ? ' (account)' : ' (plan)');
  printFields([
    ['Account', account.id],
    ['Email', account.email],
    ['Plan', account.plan],
    ['Balance', money(account.balanceNano)],
    ['Created', when(account.createdAt)],
    ['Requests/min', `${limits.requestsPerMinute}${own(settings.requestsPerMinute !== undefined)}`],
    ['Tokens/min', `${limits.tokensPerMinute}${own(settings.tokensPerMinute !== undefined)}`],
    [
      'Daily limit',
      `${limits.dailyLimitNano === null ? 'none' : money(limits.dailyLimitNano)}${own(settings.dailyLimitNano !== undefined)}`,
    ],
    [
      'Billing',
      settings.billing
        ? `${settings.billing.processor}, ceiling ${settings.billing.monthlyCeilingNano === null ? 'none' : `${money(settings.billing.monthlyCeilingNano)}/month`}`
        : 'none',
    ],
    [
      'Auto-recharge',
      autoRecharge.enabled
        ? `adds ${money(autoRecharge.amountNano)} below ${money(autoRecharge.thresholdNano)}`
        : 'off',
    ],
  ]);
}

function perMinute(value: string, param: string): number | null {
  if (value === 'none') return null;
  if (!/^\d+$/.test(value) || Number(value) < 1)
    throw invalidRequest(`${param} must be a positive whole number or "none"`, param);
  return Number(value);
}

function dailyLimit(value: string): number | null | 'none' {
  if (value === 'plan') return null;
  if (value === 'none') return 'none';
  return usdOption(value, 'daily_limit');
}

function autoRecharge(value: string): NonNullable<AccountPatch['auto_recharge']> {
  if (value === 'off') return { enabled: false };
  const [threshold, amount] = value.split(':');
  if (threshold === undefined || amount === undefined)
    throw invalidRequest('auto_recharge must be <threshold>:<amount> in USD, or "off"', 'auto_recharge');
  return {
    enabled: true,
    threshold: usdOption(threshold, 'auto_recharge.threshold'),
    amount: usdOption(amount, 'auto_recharge.amount'),
  };
}
