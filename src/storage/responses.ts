/**
 * The Responses API's response ids and who they belong to. A lookup names the account: another account's id is
 * not found, exactly like an unknown one.
 */
import type { Kysely } from 'kysely';
import type { Database } from './schema.js';

export interface StoredResponse {
  /** The provider that answered it. */
  providerId: string;
  /** The provider keeps the response, so a later request may continue from it. */
  stateful: boolean;
  /** Its input plus output tokens, which a request continuing it carries; undefined until known. */
  contextTokens: number | undefined;
}

export interface NewResponse extends Omit<StoredResponse, 'contextTokens'> {
  id: string;
  accountId: string;
  contextTokens?: number;
  now: number;
}

/** How long an id is kept: as long as OpenAI keeps a stored response. */
export const RESPONSE_RETENTION_MS = 30 * 86_400_000;
const PURGE_EVERY_MS = 3_600_000;

export class ResponseStore {
  private lastPurge = 0;

  constructor(private readonly db: Kysely<Database>) {}

  /** Records a response id; an id already recorded is left as it is. Ids past retention go, hourly at most. */
  async record(response: NewResponse): Promise<void> {
    if (response.now - this.lastPurge >= PURGE_EVERY_MS) {
      this.lastPurge = response.now;
      // Best effort, off the request's way: a failed purge is tried again within the hour.
      this.deleteCreatedBefore(response.now - RESPONSE_RETENTION_MS).catch(() => {
        this.lastPurge = 0;
      });
    }
    await this.db
      .insertInto('responses')
      .values({
        id: response.id,
        account_id: response.accountId,
        provider_id: response.providerId,
        stateful: response.stateful ? 1 : 0,
        created_at: response.now,
        context_tokens: response.contextTokens ?? null,
      })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
  }

  /** Forgets the ids recorded before `cutoff` (epoch ms); returns how many. */
  async deleteCreatedBefore(cutoff: number): Promise<number> {
    const result = await this.db.deleteFrom('responses').where('created_at', '<', BigInt(cutoff)).executeTakeFirst();
    return Number(result.numDeletedRows);
  }

  /** The account's response with this id; undefined when there is none (or it is another account's). */
  async find(accountId: string, id: string): Promise<StoredResponse | undefined> {
    const row = await this.db
      .selectFrom('responses')
      .select(['provider_id', 'stateful', 'context_tokens'])
      .where('id', '=', id)
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return (
      row && {
        providerId: row.provider_id,
        stateful: Number(row.stateful) === 1,
        contextTokens: row.context_tokens === null ? undefined : Number(row.context_tokens),
      }
    );
  }
}
