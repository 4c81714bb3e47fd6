import type { Kysely, Selectable } from 'kysely';
import type { Environment, KeyRecord, Permission } from './records.js';
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
}

function toKey(row: Selectable<ApiKeysTable>): KeyRecord {
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
      })
      .execute();
    return (await this.get(key.id))!;
  }

  async get(id: string): Promise<KeyRecord | undefined> {
    const row = await this.db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toKey(row);
  }

  async getByHash(keyHash: string): Promise<KeyRecord | undefined> {
    const row = await this.db.selectFrom('api_keys').selectAll().where('key_hash', '=', keyHash).executeTakeFirst();
    return row && toKey(row);
  }

  /** Many keys by HMAC in one query, keyed by HMAC; hashes with no key are absent. */
  async getByHashes(keyHashes: readonly string[]): Promise<Map<string, KeyRecord>> {
    if (keyHashes.length === 0) return new Map();
    const rows = await this.db.selectFrom('api_keys').selectAll().where('key_hash', 'in', keyHashes).execute();
    return new Map(rows.map((row) => [row.key_hash, toKey(row)]));
  }

  async listByAccount(accountId: string): Promise<KeyRecord[]> {
    const rows = await this.db
      .selectFrom('api_keys')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(toKey);
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
}
