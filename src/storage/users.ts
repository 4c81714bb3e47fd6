import type { Kysely } from 'kysely';
import type { Database } from './schema.js';
import { num } from './values.js';

export interface DashboardSession {
  accountId: string;
  csrfToken: string;
  expiresAt: number;
}

/** Dashboard sign-in: one password per account, and sessions keyed by the hash of their cookie token. */
export class UserStore {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(accountId: string, passwordHash: string, at: number): Promise<void> {
    await this.db.insertInto('dashboard_users').values({ account_id: accountId, password_hash: passwordHash, created_at: at }).execute();
  }

  async passwordHash(accountId: string): Promise<string | undefined> {
    const row = await this.db.selectFrom('dashboard_users').select('password_hash').where('account_id', '=', accountId).executeTakeFirst();
    return row?.password_hash;
  }

  async createSession(session: DashboardSession & { tokenHash: string; createdAt: number }): Promise<void> {
    await this.db
      .insertInto('dashboard_sessions')
      .values({
        token_hash: session.tokenHash,
        account_id: session.accountId,
        csrf_token: session.csrfToken,
        created_at: session.createdAt,
        expires_at: session.expiresAt,
      })
      .execute();
  }

  /** The session, unless it is unknown or expired at `now`. */
  async session(tokenHash: string, now: number): Promise<DashboardSession | undefined> {
    const row = await this.db
      .selectFrom('dashboard_sessions')
      .select(['account_id', 'csrf_token', 'expires_at'])
      .where('token_hash', '=', tokenHash)
      .where('expires_at', '>', BigInt(now))
      .executeTakeFirst();
    return row && { accountId: row.account_id, csrfToken: row.csrf_token, expiresAt: num(row.expires_at) };
  }

  async deleteSession(tokenHash: string): Promise<void> {
    await this.db.deleteFrom('dashboard_sessions').where('token_hash', '=', tokenHash).execute();
  }

  async deleteExpiredSessions(now: number): Promise<void> {
    await this.db.deleteFrom('dashboard_sessions').where('expires_at', '<=', BigInt(now)).execute();
  }
}
