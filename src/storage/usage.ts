import type { Kysely } from 'kysely';
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
  async totals(accountId: string, environment: string, fromDay: string, toDay: string): Promise<UsageTotals> {
    const row = await this.db
      .selectFrom('usage_daily')
      .select((eb) => [
        eb.fn.sum<bigint | string | null>('requests').as('requests'),
        eb.fn.sum<bigint | string | null>('prompt_tokens').as('prompt_tokens'),
        eb.fn.sum<bigint | string | null>('completion_tokens').as('completion_tokens'),
        eb.fn.sum<bigint | string | null>('credits_nano').as('credits_nano'),
      ])
      .where('account_id', '=', accountId)
      .where('environment', '=', environment)
      .where('day', '>=', fromDay)
      .where('day', '<=', toDay)
      .executeTakeFirst();
    return {
      requests: num(row?.requests),
      promptTokens: num(row?.prompt_tokens),
      completionTokens: num(row?.completion_tokens),
      creditsNano: big(row?.credits_nano),
    };
  }

  /** One key's totals over [fromDay, toDay] inclusive (`usage_daily_keys`: live and test keys alike). */
  async keyTotals(keyId: string, fromDay: string, toDay: string): Promise<UsageTotals> {
    const row = await this.db
      .selectFrom('usage_daily_keys')
      .select((eb) => [
        eb.fn.sum<bigint | string | null>('requests').as('requests'),
        eb.fn.sum<bigint | string | null>('prompt_tokens').as('prompt_tokens'),
        eb.fn.sum<bigint | string | null>('completion_tokens').as('completion_tokens'),
        eb.fn.sum<bigint | string | null>('credits_nano').as('credits_nano'),
      ])
      .where('key_id', '=', keyId)
      .where('day', '>=', fromDay)
      .where('day', '<=', toDay)
      .executeTakeFirst();
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
