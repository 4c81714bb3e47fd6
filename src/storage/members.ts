/** Who belongs to which account, with which role (migration 016). */
import type { Kysely } from 'kysely';
import type { Role } from './records.js';
import type { Database } from './schema.js';

export class MemberStore {
  constructor(private readonly db: Kysely<Database>) {}

  /** The user's role in the account; undefined when the user is not a member. */
  async role(accountId: string, userId: string): Promise<Role | undefined> {
    const row = await this.db
      .selectFrom('members')
      .select('role')
      .where('account_id', '=', accountId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
    return row?.role;
  }
}
