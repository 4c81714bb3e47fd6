/**
 * Reads of what requests were charged: the ledger's debits, one by id (a request's detail), page by page in time
 * order (an export that streams), or summed by day, model, key or endpoint. Every query runs on the ledger's
 * `(account_id, created_at)` index, or on `request_id` / `answer_id` for one request; none reads the whole table.
 */
import { sql, type Kysely } from 'kysely';
import { ledgerRecordOf } from './ledger.js';
import type { LedgerRecord, UsageTotals } from './records.js';
import type { Database } from './schema.js';
import { big, num } from './values.js';

export type ChargeGrouping = 'day' | 'model' | 'key' | 'endpoint';

/** Which debits: an account's, in `[fromMs, toMs)`, and only one key's when `keyId` is given. */
export interface ChargeRange {
  accountId: string;
  fromMs: number;
  toMs: number;
  keyId?: string | undefined;
}

/** Where the previous page ended: the last row's time and id (rows are ordered by both). */
export interface ChargeCursor {
  createdAt: number;
  id: string;
}

/** One group's sums; `group` is the day's number since 1970 (for `day`), or the model, key id or endpoint. */
export interface ChargeGroup extends UsageTotals {
  group: string | number | null;
}

const DAY_MS = 86_400_000;

export class ChargeStore {
  constructor(private readonly db: Kysely<Database>) {}

  /**
   * The account's debit of a request, by the request's id (`x-request-id`), its answer's id, or the ledger row's id:
   * the newest when a client reused an id. Undefined when the account has none (another account's ids included).
   */
  async find(accountId: string, id: string): Promise<LedgerRecord | undefined> {
    const row = await this.db
      .selectFrom('ledger')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('kind', '=', 'debit')
      .where((eb) => eb.or([eb('request_id', '=', id), eb('answer_id', '=', id), eb('id', '=', id)]))
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row && ledgerRecordOf(row);
  }

  /** Up to `limit` debits of the range after `after`, oldest first. */
  async page(range: ChargeRange, limit: number, after?: ChargeCursor): Promise<LedgerRecord[]> {
    let query = this.inRange(range, after?.createdAt).selectAll().orderBy('created_at').orderBy('id').limit(limit);
    if (after)
      query = query.where((eb) =>
        eb.not(eb.and([eb('created_at', '=', BigInt(after.createdAt)), eb('id', '<=', after.id)])),
      );
    return (await query.execute()).map(ledgerRecordOf);
  }

  /** The range's debits summed per group, in the group's order. */
  async grouped(range: ChargeRange, by: ChargeGrouping): Promise<ChargeGroup[]> {
    const column =
      by === 'day'
        ? sql<string | number | bigint | null>`created_at / ${sql.lit(DAY_MS)}`
        : sql<string | number | bigint | null>`${sql.ref(by === 'key' ? 'key_id' : by)}`;
    const rows = await this.inRange(range)
      .select((eb) => [
        column.as('grp'),
        eb.fn.countAll<number | string | bigint>().as('requests'),
        eb.fn.sum<bigint | string | null>('prompt_tokens').as('prompt_tokens'),
        eb.fn.sum<bigint | string | null>('completion_tokens').as('completion_tokens'),
        eb.fn.sum<bigint | string | null>('amount_nano').as('amount_nano'),
      ])
      .groupBy(sql`grp`)
      .orderBy(sql`grp`)
      .execute();
    return rows.map((r) => ({
      group: by === 'day' ? num(r.grp) : r.grp === null ? null : String(r.grp),
      requests: num(r.requests),
      promptTokens: num(r.prompt_tokens),
      completionTokens: num(r.completion_tokens),
      creditsNano: -big(r.amount_nano),
    }));
  }

  private inRange(range: ChargeRange, from = range.fromMs) {
    let query = this.db
      .selectFrom('ledger')
      .where('account_id', '=', range.accountId)
      .where('created_at', '>=', BigInt(Math.max(from, range.fromMs)))
      .where('created_at', '<', BigInt(range.toMs))
      .where('kind', '=', 'debit');
    if (range.keyId !== undefined) query = query.where('key_id', '=', range.keyId);
    return query;
  }
}
