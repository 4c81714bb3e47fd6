/** Invitations to join an account with a role, accepted once by their link (only the token's SHA-256 is kept). */
import type { Kysely } from 'kysely';
import type { Role } from './records.js';
import type { Database } from './schema.js';
import { num } from './values.js';

export interface Invitation {
  id: string;
  accountId: string;
  email: string;
  role: Role;
  invitedBy: string | null;
  createdAt: number;
  expiresAt: number;
}

export class InvitationStore {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(invitation: Invitation & { tokenHash: string }): Promise<void> {
    await this.db
      .insertInto('invitations')
      .values({
        id: invitation.id,
        account_id: invitation.accountId,
        email: invitation.email,
        role: invitation.role,
        token_hash: invitation.tokenHash,
        invited_by: invitation.invitedBy,
        created_at: invitation.createdAt,
        expires_at: invitation.expiresAt,
      })
      .execute();
  }

  /** The account's invitations not accepted, revoked or expired at `now`, oldest first. */
  async pending(accountId: string, now: number): Promise<Invitation[]> {
    const rows = await this.base()
      .where('account_id', '=', accountId)
      .where('expires_at', '>', BigInt(now))
      .orderBy('created_at')
      .orderBy('id')
      .execute();
    return rows.map(invitationOf);
  }

  /** The pending invitation `id` of the account, or undefined. */
  async get(accountId: string, id: string, now: number): Promise<Invitation | undefined> {
    const row = await this.base()
      .where('account_id', '=', accountId)
      .where('id', '=', id)
      .where('expires_at', '>', BigInt(now))
      .executeTakeFirst();
    return row && invitationOf(row);
  }

  /** The pending invitation whose link token hashes to `tokenHash`, or undefined. */
  async byToken(tokenHash: string, now: number): Promise<Invitation | undefined> {
    const row = await this.base()
      .where('token_hash', '=', tokenHash)
      .where('expires_at', '>', BigInt(now))
      .executeTakeFirst();
    return row && invitationOf(row);
  }

  async revoke(id: string, now: number): Promise<void> {
    await this.db.updateTable('invitations').set({ revoked_at: now }).where('id', '=', id).execute();
  }

  /** Marks the invitation used; true only for the one call that did (two clicks race to one acceptance). */
  async accept(id: string, now: number): Promise<boolean> {
    const result = await this.db
      .updateTable('invitations')
      .set({ accepted_at: now })
      .where('id', '=', id)
      .where('accepted_at', 'is', null)
      .where('revoked_at', 'is', null)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  private base() {
    return this.db
      .selectFrom('invitations')
      .select(['id', 'account_id', 'email', 'role', 'invited_by', 'created_at', 'expires_at'])
      .where('accepted_at', 'is', null)
      .where('revoked_at', 'is', null);
  }
}

function invitationOf(row: {
  id: string;
  account_id: string;
  email: string;
  role: Role;
  invited_by: string | null;
  created_at: number | bigint | string;
  expires_at: number | bigint | string;
}): Invitation {
  return {
    id: row.id,
    accountId: row.account_id,
    email: row.email,
    role: row.role,
    invitedBy: row.invited_by,
    createdAt: num(row.created_at),
    expiresAt: num(row.expires_at),
  };
}
