import type { Kysely } from 'kysely';
import type { Database } from './schema.js';

/** Small key/value settings of the installation (key secret, admin token hash, bootstrap marker). */
export class MetaStore {
  constructor(private readonly db: Kysely<Database>) {}

  async get(key: string): Promise<string | undefined> {
    const row = await this.db.selectFrom('meta').select('value').where('key', '=', key).executeTakeFirst();
    return row?.value;
  }

  /** Inserts unless the key exists; returns the value now stored (so concurrent starters agree). */
  async getOrInsert(key: string, value: string): Promise<string> {
    await this.db
      .insertInto('meta')
      .values({ key, value })
      .onConflict((oc) => oc.column('key').doNothing())
      .execute();
    return (await this.get(key)) ?? value;
  }

  /** True when this call inserted the key (a one-time claim). */
  async claim(key: string, value: string): Promise<boolean> {
    const result = await this.db
      .insertInto('meta')
      .values({ key, value })
      .onConflict((oc) => oc.column('key').doNothing())
      .executeTakeFirst();
    return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
  }

  async set(key: string, value: string): Promise<void> {
    await this.db
      .insertInto('meta')
      .values({ key, value })
      .onConflict((oc) => oc.column('key').doUpdateSet({ value }))
      .execute();
  }
}
