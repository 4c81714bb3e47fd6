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

  /** The account's members with their emails, oldest first. */
  async list(accountId: string): Promise<MemberRow[]> {
    const rows = await this.db
      .selectFrom('members')
      .innerJoin('users', 'users.id', 'members.user_id')
      .select(['members.user_id', 'users.email', 'members.role', 'members.created_at'])
      .where('members.account_id', '=', accountId)
      .orderBy('members.created_at')
      .orderBy('members.user_id')
      .execute();
    return rows.map((r) => ({ userId: r.user_id, email: r.email, role: r.role, joinedAt: Number(r.created_at) }));
  }

  /**
   * The account's owners. `lock` (PostgreSQL) holds their rows until the transaction ends, so two changes that
   * each leave one owner cannot both pass the last-owner check; SQLite runs one writer at a time already.
   */
  async owners(accountId: string, lock: boolean): Promise<string[]> {
    let query = this.db
      .selectFrom('members')
      .select('user_id')
      .where('account_id', '=', accountId)
      .where('role', '=', 'owner');
    if (lock) query = query.forUpdate();
    return (await query.execute()).map((r) => r.user_id);
  }

  async setRole(accountId: string, userId: string, role: Role): Promise<void> {
    await this.db
      .updateTable('members')
      .set({ role })
      .where('account_id', '=', accountId)
      .where('user_id', '=', userId)
      .execute();
  }

  /** Adds the user to the account with `role`; false (nothing changes) when it already is a member. */
  async add(accountId: string, userId: string, role: Role, at: number): Promise<boolean> {
    const result = await this.db
      .insertInto('members')
      .values({ account_id: accountId, user_id: userId, role, created_at: at })
      .onConflict((oc) => oc.columns(['account_id', 'user_id']).doNothing())
      .executeTakeFirst();
    return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
  }

  async remove(accountId: string, userId: string): Promise<void> {
    await this.db.deleteFrom('members').where('account_id', '=', accountId).where('user_id', '=', userId).execute();
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

export interface MemberRow {
  userId: string;
  email: string;
  role: Role;
  joinedAt: number;
}
