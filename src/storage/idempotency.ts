/**
 * Idempotency keys of chat requests. A claim is one INSERT that only one request can win; completing and
 * releasing name the claim, so a request whose lease ran out cannot overwrite whoever took the key over.
 */
import type { Insertable, Kysely } from 'kysely';
import type { Database, IdempotencyKeysTable, IdempotencyState } from './schema.js';
import { num } from './values.js';

export interface IdempotencyRecord {
  fingerprint: string;
  state: IdempotencyState;
  claim: string;
  requestId: string;
  /** JSON of the stored answer (state `done`). */
  response: string | null;
  expiresAt: number;
}

export interface NewClaim {
  accountId: string;
  key: string;
  fingerprint: string;
  claim: string;
  requestId: string;
  now: number;
  /** When a pending claim lapses (its request died with its process) and another request may take the key. */
  leaseUntil: number;
}

export class IdempotencyStore {
  constructor(private readonly db: Kysely<Database>) {}

  /** True when this request now owns the key: it was free, or its last holder expired. */
  async claim(claim: NewClaim): Promise<boolean> {
    const values: Insertable<IdempotencyKeysTable> = {
      account_id: claim.accountId,
      idempotency_key: claim.key,
      fingerprint: claim.fingerprint,
      state: 'pending',
      claim: claim.claim,
      request_id: claim.requestId,
      response: null,
      created_at: claim.now,
      expires_at: claim.leaseUntil,
    };
    const inserted = await this.db
      .insertInto('idempotency_keys')
      .values(values)
      .onConflict((oc) => oc.columns(['account_id', 'idempotency_key']).doNothing())
      .executeTakeFirst();
    if (Number(inserted.numInsertedOrUpdatedRows ?? 0n) > 0) return true;
    const taken = await this.db
      .updateTable('idempotency_keys')
      .set(values)
      .where('account_id', '=', claim.accountId)
      .where('idempotency_key', '=', claim.key)
      .where('expires_at', '<=', BigInt(claim.now))
      .executeTakeFirst();
    return Number(taken.numUpdatedRows) > 0;
  }

  async get(accountId: string, key: string): Promise<IdempotencyRecord | undefined> {
    const row = await this.db
      .selectFrom('idempotency_keys')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('idempotency_key', '=', key)
      .executeTakeFirst();
    if (!row) return undefined;
    return {
      fingerprint: row.fingerprint,
      state: row.state,
      claim: row.claim,
      requestId: row.request_id,
      response: row.response,
      expiresAt: num(row.expires_at),
    };
  }

  /** Stores the answer of the claim's request; false when the claim was lost meanwhile. */
  async complete(accountId: string, key: string, claim: string, response: string, expiresAt: number): Promise<boolean> {
    const result = await this.db
      .updateTable('idempotency_keys')
      .set({ state: 'done', response, expires_at: expiresAt })
      .where('account_id', '=', accountId)
      .where('idempotency_key', '=', key)
      .where('claim', '=', claim)
      .executeTakeFirst();
    return Number(result.numUpdatedRows) > 0;
  }

  /** Frees the key after a request that produced no answer to keep. */
  async release(accountId: string, key: string, claim: string): Promise<void> {
    await this.db
      .deleteFrom('idempotency_keys')
      .where('account_id', '=', accountId)
      .where('idempotency_key', '=', key)
      .where('claim', '=', claim)
      .where('state', '=', 'pending')
      .execute();
  }

  async deleteExpired(now: number): Promise<number> {
    const result = await this.db
      .deleteFrom('idempotency_keys')
      .where('expires_at', '<=', BigInt(now))
      .executeTakeFirst();
    return Number(result.numDeletedRows);
  }
}
