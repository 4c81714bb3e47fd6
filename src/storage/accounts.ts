import type { Kysely, Selectable } from 'kysely';
import type { AccountRecord, AccountSettings } from './records.js';
import type { AccountsTable, Database } from './schema.js';
import { big, num, storedJson } from './values.js';

interface StoredSettings {
  requests_per_minute?: number;
  tokens_per_minute?: number;
  daily_limit_nano?: string | null;
  auto_recharge?: {
    enabled: boolean;
    threshold_nano: string;
    amount_nano: string;
    failures?: number;
    disabled_reason?: string;
  };
  billing?: { processor: string; monthly_ceiling_nano: string | null };
  low_balance_thresholds_nano?: string[];
}

export function encodeSettings(settings: AccountSettings): string {
  const stored: StoredSettings = {
    auto_recharge: {
      enabled: settings.autoRecharge.enabled,
      threshold_nano: settings.autoRecharge.thresholdNano.toString(),
      amount_nano: settings.autoRecharge.amountNano.toString(),
    },
  };
  if (settings.autoRecharge.failures) stored.auto_recharge!.failures = settings.autoRecharge.failures;
  if (settings.autoRecharge.disabledReason)
    stored.auto_recharge!.disabled_reason = settings.autoRecharge.disabledReason;
  if (settings.requestsPerMinute !== undefined) stored.requests_per_minute = settings.requestsPerMinute;
  if (settings.tokensPerMinute !== undefined) stored.tokens_per_minute = settings.tokensPerMinute;
  if (settings.dailyLimitNano !== undefined) stored.daily_limit_nano = settings.dailyLimitNano?.toString() ?? null;
  if (settings.billing) {
    stored.billing = {
      processor: settings.billing.processor,
      monthly_ceiling_nano: settings.billing.monthlyCeilingNano?.toString() ?? null,
    };
  }
  if (settings.lowBalanceThresholdsNano)
    stored.low_balance_thresholds_nano = settings.lowBalanceThresholdsNano.map(String);
  return JSON.stringify(stored);
}

export function decodeSettings(text: string): AccountSettings {
  const stored = storedJson<StoredSettings>(text);
  const settings: AccountSettings = {
    autoRecharge: {
      enabled: stored.auto_recharge?.enabled ?? false,
      thresholdNano: BigInt(stored.auto_recharge?.threshold_nano ?? '0'),
      amountNano: BigInt(stored.auto_recharge?.amount_nano ?? '0'),
    },
  };
  if (stored.auto_recharge?.failures) settings.autoRecharge.failures = stored.auto_recharge.failures;
  if (stored.auto_recharge?.disabled_reason)
    settings.autoRecharge.disabledReason = stored.auto_recharge.disabled_reason;
  if (stored.requests_per_minute !== undefined) settings.requestsPerMinute = stored.requests_per_minute;
  if (stored.tokens_per_minute !== undefined) settings.tokensPerMinute = stored.tokens_per_minute;
  if (stored.daily_limit_nano !== undefined) {
    settings.dailyLimitNano = stored.daily_limit_nano === null ? null : BigInt(stored.daily_limit_nano);
  }
  if (stored.billing) {
    const ceiling = stored.billing.monthly_ceiling_nano;
    settings.billing = {
      processor: stored.billing.processor,
      monthlyCeilingNano: ceiling === null ? null : BigInt(ceiling),
    };
  }
  if (stored.low_balance_thresholds_nano)
    settings.lowBalanceThresholdsNano = stored.low_balance_thresholds_nano.map(BigInt);
  return settings;
}

export function toAccount(row: Selectable<AccountsTable>): AccountRecord {
  return {
    id: row.id,
    email: row.email,
    plan: row.plan,
    balanceNano: big(row.balance_nano),
    version: big(row.version),
    settings: decodeSettings(row.settings),
    createdAt: num(row.created_at),
    closedAt: row.closed_at === null ? null : num(row.closed_at),
  };
}

export class AccountStore {
  constructor(private readonly db: Kysely<Database>) {}

  async get(id: string): Promise<AccountRecord | undefined> {
    const row = await this.db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toAccount(row);
  }

  async getByEmail(email: string): Promise<AccountRecord | undefined> {
    const row = await this.db.selectFrom('accounts').selectAll().where('email', '=', email).executeTakeFirst();
    return row && toAccount(row);
  }

  async list(options: { limit: number; after?: string }): Promise<AccountRecord[]> {
    let query = this.db.selectFrom('accounts').selectAll().orderBy('id').limit(options.limit);
    if (options.after) query = query.where('id', '>', options.after);
    return (await query.execute()).map(toAccount);
  }

  /** Balances and versions of the given accounts (cache refresh). */
  async balances(ids: string[]): Promise<Array<{ id: string; balanceNano: bigint; version: bigint }>> {
    if (ids.length === 0) return [];
    const rows = await this.db
      .selectFrom('accounts')
      .select(['id', 'balance_nano', 'version'])
      .where('id', 'in', ids)
      .execute();
    return rows.map((r) => ({ id: r.id, balanceNano: big(r.balance_nano), version: big(r.version) }));
  }

  /** Plan and settings changes; they bump the version so every cache picks them up. */
  async update(id: string, changes: { plan?: string; settings?: AccountSettings }): Promise<AccountRecord | undefined> {
    const set: { plan?: string; settings?: string } = {};
    if (changes.plan !== undefined) set.plan = changes.plan;
    if (changes.settings !== undefined) set.settings = encodeSettings(changes.settings);
    await this.db
      .updateTable('accounts')
      .set((eb) => ({ ...set, version: eb('version', '+', 1n) }))
      .where('id', '=', id)
      .execute();
    return this.get(id);
  }

  /**
   * Marks the account closed; false when it already was. On PostgreSQL the update holds the account's row until the
   * change commits, so a key made at the same moment (`isClosed` with `lock`) waits for it and sees it closed.
   */
  async close(id: string, at: number): Promise<boolean> {
    const result = await this.db
      .updateTable('accounts')
      .set((eb) => ({ closed_at: at, version: eb('version', '+', 1n) }))
      .where('id', '=', id)
      .where('closed_at', 'is', null)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  /** Whether the account is closed; with `lock` (PostgreSQL), waits for a closing in progress. */
  async isClosed(id: string, lock: boolean): Promise<boolean> {
    let query = this.db.selectFrom('accounts').select('closed_at').where('id', '=', id);
    if (lock) query = query.forShare();
    const row = await query.executeTakeFirst();
    return row !== undefined && row.closed_at !== null;
  }
}
