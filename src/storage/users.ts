import type { Kysely } from 'kysely';
import type { Database, EmailStatus } from './schema.js';
import { mailboxOf } from './mailboxes.js';
import { num } from './values.js';

/** 'pending': signed up where SMTP is configured, no sign-in until verified; 'unverified': signed up without SMTP. */
export type { EmailStatus };

export interface DashboardUser {
  passwordHash: string;
  emailStatus: EmailStatus;
}

/** A `users` row: one person, who may belong to several accounts. */
export interface Person {
  id: string;
  email: string;
  passwordHash: string;
  emailStatus: EmailStatus;
}

export interface EmailVerification {
  tokenHash: string;
  accountId: string;
  passwordHash: string;
  createdAt: number;
  expiresAt: number;
}

export interface DashboardSession {
  accountId: string;
  /** The signed-in person (`users.id`). */
  userId: string;
  csrfToken: string;
  expiresAt: number;
}

/**
 * The people who sign in to the dashboard (`users`), their email verification, and sessions keyed by the hash of
 * their cookie token. A person who signed up has the user made for its own account (`userIdOf`).
 */
export class UserStore {
  constructor(private readonly db: Kysely<Database>) {}

  /** The person signing up for `accountId` (its email), owner of that account. */
  async insert(
    accountId: string,
    passwordHash: string,
    at: number,
    emailStatus: EmailStatus = 'unverified',
  ): Promise<void> {
    const { email } = await this.db
      .selectFrom('accounts')
      .select('email')
      .where('id', '=', accountId)
      .executeTakeFirstOrThrow();
    const userId = userIdOf(accountId);
    await this.db
      .insertInto('users')
      .values({ id: userId, email, password_hash: passwordHash, email_status: emailStatus, created_at: at })
      .execute();
    await this.db
      .insertInto('members')
      .values({ account_id: accountId, user_id: userId, role: 'owner', created_at: at })
      .execute();
  }

  async passwordHash(accountId: string): Promise<string | undefined> {
    return (await this.user(accountId))?.passwordHash;
  }

  /** The person made for `accountId` at its sign-up, if any. */
  async user(accountId: string): Promise<DashboardUser | undefined> {
    const row = await this.db
      .selectFrom('users')
      .select(['password_hash', 'email_status'])
      .where('id', '=', userIdOf(accountId))
      .executeTakeFirst();
    return row && { passwordHash: row.password_hash, emailStatus: row.email_status };
  }

  async createVerification(verification: EmailVerification): Promise<void> {
    const { tokenHash, accountId, passwordHash, createdAt, expiresAt } = verification;
    await this.db
      .insertInto('email_verifications')
      .values({
        token_hash: tokenHash,
        account_id: accountId,
        password_hash: passwordHash,
        created_at: createdAt,
        expires_at: expiresAt,
      })
      .execute();
  }

  /**
   * Marks the token used, once: the account and the password of its sign-up the first time, 'used' after that,
   * undefined when the token is unknown or expired.
   */
  async useVerification(
    tokenHash: string,
    now: number,
  ): Promise<{ accountId: string; passwordHash: string } | 'used' | undefined> {
    const updated = await this.db
      .updateTable('email_verifications')
      .set({ used_at: now })
      .where('token_hash', '=', tokenHash)
      .where('used_at', 'is', null)
      .where('expires_at', '>', BigInt(now))
      .executeTakeFirst();
    const row = await this.db
      .selectFrom('email_verifications')
      .select(['account_id', 'password_hash', 'used_at', 'expires_at'])
      .where('token_hash', '=', tokenHash)
      .executeTakeFirst();
    if (!row || num(row.expires_at) <= now) return undefined;
    return updated.numUpdatedRows > 0n ? { accountId: row.account_id, passwordHash: row.password_hash } : 'used';
  }

  /**
   * Verifies the account's email and sets the password its link carried; ends every session and other link of
   * the account. True only for the call that made the email verified.
   */
  async markVerified(accountId: string, passwordHash: string, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable('users')
      .set({ email_status: 'verified', password_hash: passwordHash })
      .where('id', '=', userIdOf(accountId))
      .where('email_status', '!=', 'verified')
      .executeTakeFirst();
    if (result.numUpdatedRows === 0n) return false;
    await this.db.deleteFrom('dashboard_sessions').where('account_id', '=', accountId).execute();
    await this.db
      .updateTable('email_verifications')
      .set({ used_at: now })
      .where('account_id', '=', accountId)
      .where('used_at', 'is', null)
      .execute();
    return true;
  }

  /** Records a sign-up attempt from `ip`; returns the attempts since `since` (this one included) and the oldest's time. */
  async countSignupAttempt(ip: string, at: number, since: number): Promise<{ count: number; oldest: number }> {
    await this.db.insertInto('signup_attempts').values({ ip, created_at: at }).execute();
    const row = await this.db
      .selectFrom('signup_attempts')
      .select((eb) => [
        eb.fn.countAll<number | bigint | string>().as('count'),
        eb.fn.min<number | bigint | string | null>('created_at').as('oldest'),
      ])
      .where('ip', '=', ip)
      .where('created_at', '>', BigInt(since))
      .executeTakeFirstOrThrow();
    return { count: Number(row.count), oldest: Number(row.oldest ?? at) };
  }

  /**
   * Claims the sign-up grant of `email`'s mailbox (storage/mailboxes.ts) for the account: true for the one claim
   * that gets it, however many accounts of that mailbox ask at once (the mailbox is the table's primary key).
   */
  async claimSignupGrant(accountId: string, email: string, at: number): Promise<boolean> {
    const result = await this.db
      .insertInto('signup_grant_mailboxes')
      .values({ mailbox: mailboxOf(email), account_id: accountId, created_at: at })
      .onConflict((oc) => oc.column('mailbox').doNothing())
      .executeTakeFirst();
    return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
  }

  /** Gives a claim back (the grant it was for could not be credited). */
  async releaseSignupGrant(accountId: string, email: string): Promise<void> {
    await this.db
      .deleteFrom('signup_grant_mailboxes')
      .where('mailbox', '=', mailboxOf(email))
      .where('account_id', '=', accountId)
      .execute();
  }

  /** Whether an account of `email`'s mailbox other than `accountId` has had the sign-up grant. */
  async signupGrantTaken(email: string, accountId: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('signup_grant_mailboxes')
      .select('account_id')
      .where('mailbox', '=', mailboxOf(email))
      .executeTakeFirst();
    return row !== undefined && row.account_id !== accountId;
  }

  async deleteOldSignupAttempts(before: number): Promise<void> {
    await this.db.deleteFrom('signup_attempts').where('created_at', '<=', BigInt(before)).execute();
    await this.db.deleteFrom('email_verifications').where('expires_at', '<=', BigInt(before)).execute();
  }

  async createSession(session: DashboardSession & { tokenHash: string; createdAt: number }): Promise<void> {
    await this.db
      .insertInto('dashboard_sessions')
      .values({
        token_hash: session.tokenHash,
        account_id: session.accountId,
        user_id: session.userId,
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
      .select(['account_id', 'user_id', 'csrf_token', 'expires_at'])
      .where('token_hash', '=', tokenHash)
      .where('expires_at', '>', BigInt(now))
      .executeTakeFirst();
    return (
      row && {
        accountId: row.account_id,
        userId: row.user_id ?? userIdOf(row.account_id),
        csrfToken: row.csrf_token,
        expiresAt: num(row.expires_at),
      }
    );
  }

  /** The person with this (normalised) email, for sign-in and invitations. */
  async byEmail(email: string): Promise<Person | undefined> {
    const row = await this.db
      .selectFrom('users')
      .select(['id', 'email', 'password_hash', 'email_status'])
      .where('email', '=', email)
      .executeTakeFirst();
    return row && { id: row.id, email: row.email, passwordHash: row.password_hash, emailStatus: row.email_status };
  }

  /** A person who joins by invitation (no account of their own). */
  async insertPerson(person: Person, at: number): Promise<void> {
    await this.db
      .insertInto('users')
      .values({
        id: person.id,
        email: person.email,
        password_hash: person.passwordHash,
        email_status: person.emailStatus,
        created_at: at,
      })
      .execute();
  }

  /** The person's email (one user per email). */
  async emailOf(userId: string): Promise<string | undefined> {
    const row = await this.db.selectFrom('users').select('email').where('id', '=', userId).executeTakeFirst();
    return row?.email;
  }

  /** Points the session at another account (the caller checked the user is a member of it). */
  async switchSessionAccount(tokenHash: string, accountId: string): Promise<void> {
    await this.db
      .updateTable('dashboard_sessions')
      .set({ account_id: accountId })
      .where('token_hash', '=', tokenHash)
      .execute();
  }

  async deleteSession(tokenHash: string): Promise<void> {
    await this.db.deleteFrom('dashboard_sessions').where('token_hash', '=', tokenHash).execute();
  }

  async deleteExpiredSessions(now: number): Promise<void> {
    await this.db.deleteFrom('dashboard_sessions').where('expires_at', '<=', BigInt(now)).execute();
  }
}

/** The user made from an account's own dashboard user (migration 016 names them the same way). */
export function userIdOf(accountId: string): string {
  return accountId.replace(/^acct_/, 'usr_');
}
