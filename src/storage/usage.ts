import { sql, type Kysely } from 'kysely';
import type { UsageTotals } from './records.js';
import type { Database } from './schema.js';
import { big, num } from './values.js';

export interface DailyUsageRow extends UsageTotals {
  day: string;
  model: string;
}

/** Reads of the daily usage counters (writes go through the ledger's commit). Days are `YYYY-MM-DD` UTC. */
export class UsageStore {
  constructor(private readonly db: Kysely<Database>) {}

  /** Totals over [fromDay, toDay] inclusive for one environment. */
  totals(accountId: string, environment: string, fromDay: string, toDay: string): Promise<UsageTotals> {
    return this.sums('usage_daily', { account_id: accountId, environment }, fromDay, toDay);
  }

  /** One key's totals over [fromDay, toDay] inclusive (`usage_daily_keys`: live and test keys alike). */
  keyTotals(keyId: string, fromDay: string, toDay: string): Promise<UsageTotals> {
    return this.sums('usage_daily_keys', { key_id: keyId }, fromDay, toDay);
  }

  private async sums(
    table: 'usage_daily' | 'usage_daily_keys',
    match: Record<string, string>,
    fromDay: string,
    toDay: string,
  ): Promise<UsageTotals> {
    let query = this.db
      .selectFrom(table)
      .select((eb) => [
        eb.fn.sum<bigint | string | null>('requests').as('requests'),
        eb.fn.sum<bigint | string | null>('prompt_tokens').as('prompt_tokens'),
        eb.fn.sum<bigint | string | null>('completion_tokens').as('completion_tokens'),
        eb.fn.sum<bigint | string | null>('credits_nano').as('credits_nano'),
      ])
      .where('day', '>=', fromDay)
      .where('day', '<=', toDay);
    for (const [column, value] of Object.entries(match)) query = query.where(sql.ref(column), '=', value);
    const row = await query.executeTakeFirst();
    return {
      requests: num(row?.requests),
      promptTokens: num(row?.prompt_tokens),
      completionTokens: num(row?.completion_tokens),
      creditsNano: big(row?.credits_nano),
    };
  }

  /** Per day and model, for charts and breakdowns. */
  async daily(accountId: string, environment: string, fromDay: string, toDay: string): Promise<DailyUsageRow[]> {
    const rows = await this.db
      .selectFrom('usage_daily')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('environment', '=', environment)
      .where('day', '>=', fromDay)
      .where('day', '<=', toDay)
      .orderBy('day')
      .orderBy('model')
      .execute();
    return rows.map((r) => ({
      day: r.day,
      model: r.model,
      requests: num(r.requests),
      promptTokens: num(r.prompt_tokens),
      completionTokens: num(r.completion_tokens),
      creditsNano: big(r.credits_nano),
    }));
  }
}
