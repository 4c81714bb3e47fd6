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

  /** The accounts the user belongs to, the ones it owns first, then oldest membership first. */
  async accountsOf(userId: string): Promise<Membership[]> {
    const rows = await this.db
      .selectFrom('members')
      .innerJoin('accounts', 'accounts.id', 'members.account_id')
      .select(['members.account_id', 'members.role', 'members.created_at', 'accounts.email'])
      .where('members.user_id', '=', userId)
      .orderBy('members.created_at')
      .orderBy('members.account_id')
      .execute();
    const memberships = rows.map((row) => ({ accountId: row.account_id, email: row.email, role: row.role }));
    return [...memberships.filter((m) => m.role === 'owner'), ...memberships.filter((m) => m.role !== 'owner')];
  }
}

export interface Membership {
  accountId: string;
  /** The account's email (its owner's at sign-up). */
  email: string;
  role: Role;
}
