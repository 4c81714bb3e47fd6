/**
 * Closing an account: the owner's "delete". The ledger is append-only and a payment may still be refunded or
 * disputed, so the account row, its balance, ledger, receipts and audit log stay; everything that lets anyone act
 * on it goes, in one transaction: its keys are revoked, its webhooks deleted, its pending invitations revoked, its
 * members removed and auto-recharge switched off. A closed account gets no new key (`AdminService.createKey`).
 */
import { usdString } from '../money/index.js';
import { GatewayError, invalidRequest } from '../errors/index.js';
import type { Actor, Storage } from '../storage/index.js';

export interface ClosedAccount {
  accountId: string;
  closedAt: number;
  /** Keys revoked by the closing: caches on every replica must drop them. */
  revokedKeyIds: string[];
}

export async function closeAccount(storage: Storage, accountId: string, actor: Actor): Promise<ClosedAccount> {
  const now = Date.now();
  return storage.atomically(async (tx) => {
    // First, so that a concurrent closing or key creation waits for this one on PostgreSQL.
    const closedNow = await tx.accounts.close(accountId, now);
    const account = await tx.accounts.get(accountId);
    if (!account) throw new GatewayError('not_found', { message: `No account ${accountId}` });
    if (!closedNow) throw invalidRequest(`Account ${accountId} is already closed`);

    const keys = (await tx.keys.listByAccount(accountId)).filter((k) => k.revokedAt === null);
    for (const key of keys) await tx.keys.revoke(key.id, now);
    const webhooks = await tx.webhooks.listByAccount(accountId);
    for (const webhook of webhooks) await tx.webhooks.deleteWithin(webhook.id);
    const invitations = await tx.invitations.pending(accountId, now);
    for (const invitation of invitations) await tx.invitations.revoke(invitation.id, now);
    const members = await tx.members.list(accountId);
    for (const member of members) await tx.members.remove(accountId, member.userId);
    const { autoRecharge } = account.settings;
    if (autoRecharge.enabled)
      await tx.accounts.update(accountId, {
        settings: {
          ...account.settings,
          autoRecharge: { ...autoRecharge, enabled: false, disabledReason: 'account closed' },
        },
      });

    await tx.audit.record({
      accountId,
      actor,
      action: 'account.close',
      target: { type: 'account', id: accountId },
      before: {
        balance: usdString(account.balanceNano),
        members: members.map((m) => ({ user_id: m.userId, email: m.email, role: m.role })),
        keys: keys.map((k) => k.id),
        webhooks: webhooks.map((w) => w.id),
        invitations: invitations.map((i) => i.id),
        auto_recharge: autoRecharge.enabled,
      },
      after: { closed_at: new Date(now).toISOString(), balance: usdString(account.balanceNano) },
      at: now,
    });
    return { accountId, closedAt: now, revokedKeyIds: keys.map((k) => k.id) };
  });
}
