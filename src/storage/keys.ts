import { sql, type Kysely, type Selectable, type Updateable } from 'kysely';
import type { Environment, KeyRecord, LimitReset, Permission, Role } from './records.js';
import { periodOf, periodStartDay } from './periods.js';
import type { ApiKeysTable, Database } from './schema.js';
import { big, bigOrNull, num, numOrNull, storedJson } from './values.js';

export interface NewKey {
  id: string;
  accountId: string;
  name: string;
  keyHash: string;
  hint: string;
  environment: Environment;
  permissions: Permission;
  models: string[];
  spendLimitNano: bigint | null;
  createdAt: number;
  limitReset?: LimitReset | null;
  expiresAt?: number | null;
  requestsPerMinute?: number | null;
  tokensPerMinute?: number | null;
  allowedIps?: string[];
  ownerUserId?: string | null;
}

/** What `KeyStore.update` may change; absent fields stay as they are. */
export interface KeyChanges {
  name?: string;
  models?: string[];
  spendLimitNano?: bigint | null;
  limitReset?: LimitReset | null;
  expiresAt?: number | null;
  requestsPerMinute?: number | null;
  tokensPerMinute?: number | null;
  allowedIps?: string[];
}

type KeyRow = Selectable<ApiKeysTable> & {
  period_spent_nano?: bigint | number | string | null;
  owner_role?: Role | null;
  owner_email?: string | null;
};

function toKey(row: KeyRow, at: number): KeyRecord {
  const limitReset = row.limit_reset;
  return {
    id: row.id,
    accountId: row.account_id,
    name: row.name,
    hint: row.hint,
    environment: row.environment,
    permissions: row.permissions,
    models: storedJson<string[]>(row.models),
    spendLimitNano: bigOrNull(row.spend_limit_nano),
    spentNano: big(row.spent_nano),
    createdAt: num(row.created_at),
    lastUsedAt: numOrNull(row.last_used_at),
    revokedAt: numOrNull(row.revoked_at),
    limitReset,
    periodSpentNano: limitReset === null ? big(row.spent_nano) : big(row.period_spent_nano),
    period: periodOf(limitReset, at),
    expiresAt: numOrNull(row.expires_at),
    requestsPerMinute: numOrNull(row.requests_per_minute),
    tokensPerMinute: numOrNull(row.tokens_per_minute),
    allowedIps: storedJson<string[]>(row.allowed_ips),
    ownerUserId: row.owner_user_id,
    ownerRole: row.owner_role ?? null,
    ownerEmail: row.owner_email ?? null,
  };
}

export class KeyStore {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(key: NewKey): Promise<KeyRecord> {
    await this.db
      .insertInto('api_keys')
      .values({
        id: key.id,
        account_id: key.accountId,
        name: key.name,
        key_hash: key.keyHash,
        hint: key.hint,
        environment: key.environment,
        permissions: key.permissions,
        models: JSON.stringify(key.models),
        spend_limit_nano: key.spendLimitNano,
        spent_nano: 0n,
        created_at: key.createdAt,
        limit_reset: key.limitReset ?? null,
        expires_at: key.expiresAt ?? null,
        requests_per_minute: key.requestsPerMinute ?? null,
        tokens_per_minute: key.tokensPerMinute ?? null,
        allowed_ips: JSON.stringify(key.allowedIps ?? []),
        owner_user_id: key.ownerUserId ?? null,
      })
      .execute();
    return (await this.get(key.id))!;
  }

  async get(id: string): Promise<KeyRecord | undefined> {
    return (await this.rows('id', [id]))[0]?.key;
  }

  async getByHash(keyHash: string): Promise<KeyRecord | undefined> {
    return (await this.rows('key_hash', [keyHash]))[0]?.key;
  }

  /** Many keys by HMAC in one query, keyed by HMAC; hashes with no key are absent. */
  async getByHashes(keyHashes: readonly string[]): Promise<Map<string, KeyRecord>> {
    if (keyHashes.length === 0) return new Map();
    const rows = await this.rows('key_hash', keyHashes);
    return new Map(rows.map(({ row, key }) => [row.key_hash, key]));
  }

  async listByAccount(accountId: string): Promise<KeyRecord[]> {
    return (await this.rows('account_id', [accountId])).map(({ key }) => key);
  }

  /** Changes the key's governance and name; returns it as it is now, undefined when no such key exists. */
  async update(id: string, changes: KeyChanges): Promise<KeyRecord | undefined> {
    const set: Updateable<ApiKeysTable> = {};
    if (changes.name !== undefined) set.name = changes.name;
    if (changes.models !== undefined) set.models = JSON.stringify(changes.models);
    if (changes.spendLimitNano !== undefined) set.spend_limit_nano = changes.spendLimitNano;
    if (changes.limitReset !== undefined) set.limit_reset = changes.limitReset;
    if (changes.expiresAt !== undefined) set.expires_at = changes.expiresAt;
    if (changes.requestsPerMinute !== undefined) set.requests_per_minute = changes.requestsPerMinute;
    if (changes.tokensPerMinute !== undefined) set.tokens_per_minute = changes.tokensPerMinute;
    if (changes.allowedIps !== undefined) set.allowed_ips = JSON.stringify(changes.allowedIps);
    if (Object.keys(set).length > 0) await this.db.updateTable('api_keys').set(set).where('id', '=', id).execute();
    return this.get(id);
  }

  /** Returns the revoked key, or undefined when no such key exists. Revoking twice keeps the first time. */
  async revoke(id: string, at: number): Promise<KeyRecord | undefined> {
    await this.db
      .updateTable('api_keys')
      .set({ revoked_at: at })
      .where('id', '=', id)
      .where('revoked_at', 'is', null)
      .execute();
    return this.get(id);
  }

  /**
   * Keys whose `column` is one of `values`, oldest first, with what each spent in its limit's current period: the
   * sum of its daily usage rows since the period's first day (an index range on `usage_daily_keys`), so a limit that
   * resets needs no writer of its own.
   */
  private async rows(
    column: 'id' | 'key_hash' | 'account_id',
    values: readonly string[],
  ): Promise<Array<{ row: KeyRow; key: KeyRecord }>> {
    const at = Date.now();
    const since = sql<string>`case api_keys.limit_reset when 'daily' then ${periodStartDay('daily', at)} when 'weekly' then ${periodStartDay('weekly', at)} when 'monthly' then ${periodStartDay('monthly', at)} end`;
    const rows: KeyRow[] = await this.db
      .selectFrom('api_keys')
      .leftJoin('members', (join) =>
        join
          .onRef('members.account_id', '=', 'api_keys.account_id')
          .onRef('members.user_id', '=', 'api_keys.owner_user_id'),
      )
      .leftJoin('users', 'users.id', 'api_keys.owner_user_id')
      .selectAll('api_keys')
      .select(['members.role as owner_role', 'users.email as owner_email'])
      .select((eb) =>
        eb
          .selectFrom('usage_daily_keys')
          .select(sql<bigint>`coalesce(sum(usage_daily_keys.credits_nano), 0)`.as('spent'))
          .whereRef('usage_daily_keys.key_id', '=', 'api_keys.id')
          .where(sql<boolean>`usage_daily_keys.day >= ${since}`)
          .as('period_spent_nano'),
      )
      .where(`api_keys.${column}`, values.length === 1 ? '=' : 'in', values.length === 1 ? values[0]! : values)
      .orderBy('api_keys.created_at')
      .orderBy('api_keys.id')
      .execute();
    return rows.map((row) => ({ row, key: toKey(row, at) }));
  }
}
