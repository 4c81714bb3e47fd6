/**
 * The Members section: who belongs to the signed-in account and with which role; change a role, remove a member
 * (their keys are revoked in the same transaction), leave. Only an owner makes, unmakes or removes an owner, and
 * the last owner can neither leave, be removed nor be demoted: the check and the change share one transaction.
 * Every change is audited in that transaction.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { keyAuditView } from '../admin/key-audit.js';
import { isRole } from '../auth/index.js';
import { GatewayError, invalidRequest } from '../errors/index.js';
import type { HttpDeps } from '../http/index.js';
import { typed } from '../http/routes/typed.js';
import type { Changes } from '../storage/index.js';
import { userActor, type Sessions, type SignedIn } from './session.js';

const UserParams = Type.Object({ user_id: Type.String({ minLength: 1, maxLength: 100 }) });
const RoleBody = Type.Object({ role: Type.String() }, { additionalProperties: false });

const LAST_OWNER = 'An account needs an owner: make another member an owner first';

export function memberRoutes(app: FastifyInstance, deps: HttpDeps, sessions: Sessions): void {
  const scope = typed(app);
  const lock = deps.storage.dialect === 'postgres';

  /** The member `userId` of the account, inside the change (404 when not a member). */
  async function memberOf(changes: Changes, accountId: string, userId: string) {
    const member = (await changes.members.list(accountId)).find((m) => m.userId === userId);
    if (!member) throw new GatewayError('not_found', { message: `No member ${userId}`, param: 'user_id' });
    return member;
  }

  /** Refuses a change that would leave the account without an owner. */
  async function keepAnOwner(changes: Changes, accountId: string, userId: string): Promise<void> {
    const owners = await changes.members.owners(accountId, lock);
    if (owners.length === 1 && owners[0] === userId) throw invalidRequest(LAST_OWNER, 'user_id');
  }

  /** Removes the member and revokes the keys it owns in this account. */
  async function removeMember(changes: Changes, request: FastifyRequest, user: SignedIn, userId: string) {
    const now = Date.now();
    const revoked: string[] = [];
    await changes.members.remove(user.accountId, userId);
    for (const key of await changes.keys.listByAccount(user.accountId)) {
      if (key.ownerUserId !== userId || key.revokedAt !== null) continue;
      const after = (await changes.keys.revoke(key.id, now))!;
      revoked.push(key.id);
      await changes.audit.record({
        accountId: user.accountId,
        actor: userActor(request, user.userId),
        action: 'key.revoke',
        target: { type: 'key', id: key.id },
        before: keyAuditView(key),
        after: keyAuditView(after),
        at: now,
      });
    }
    return revoked;
  }

  scope.get('/api/members', async (request) => {
    const { accountId } = await sessions.require(request, 'members');
    const members = await deps.storage.members.list(accountId);
    return {
      object: 'list',
      data: members.map((m) => ({
        user_id: m.userId,
        email: m.email,
        role: m.role,
        joined: Math.floor(m.joinedAt / 1000),
      })),
    };
  });

  scope.patch('/api/members/:user_id', { schema: { params: UserParams, body: RoleBody } }, async (request) => {
    const user = await sessions.require(request, 'members');
    const role = request.body.role;
    if (!isRole(role)) throw invalidRequest("Invalid value for 'role': owner, admin, member or billing", 'role');
    const { user_id: userId } = request.params;
    return deps.storage.atomically(async (changes) => {
      const member = await memberOf(changes, user.accountId, userId);
      if ((member.role === 'owner' || role === 'owner') && user.role !== 'owner')
        throw new GatewayError('permission_denied', { message: 'Only an owner may make or unmake an owner' });
      if (member.role === 'owner' && role !== 'owner') await keepAnOwner(changes, user.accountId, userId);
      if (member.role !== role) {
        await changes.members.setRole(user.accountId, userId, role);
        await changes.audit.record({
          accountId: user.accountId,
          actor: userActor(request, user.userId),
          action: 'member.role',
          target: { type: 'member', id: userId },
          before: { email: member.email, role: member.role },
          after: { email: member.email, role },
        });
      }
      return { object: 'member', user_id: userId, email: member.email, role };
    });
  });

  scope.delete('/api/members/:user_id', { schema: { params: UserParams } }, async (request) => {
    const user = await sessions.require(request, 'members');
    const { user_id: userId } = request.params;
    const revoked = await deps.storage.atomically(async (changes) => {
      const member = await memberOf(changes, user.accountId, userId);
      if (member.role === 'owner' && user.role !== 'owner')
        throw new GatewayError('permission_denied', { message: 'Only an owner may remove an owner' });
      if (member.role === 'owner') await keepAnOwner(changes, user.accountId, userId);
      const keyIds = await removeMember(changes, request, user, userId);
      await changes.audit.record({
        accountId: user.accountId,
        actor: userActor(request, user.userId),
        action: userId === user.userId ? 'member.leave' : 'member.remove',
        target: { type: 'member', id: userId },
        before: { email: member.email, role: member.role },
        after: null,
      });
      return keyIds;
    });
    await deps.admin.keysRevoked(user.accountId, revoked);
    return { object: 'member', user_id: userId, deleted: true };
  });

  /** Any member may leave (the last owner excepted); its keys in the account are revoked. */
  scope.post('/api/members/leave', async (request, reply) => {
    const user = await sessions.require(request);
    const revoked = await deps.storage.atomically(async (changes) => {
      const member = await memberOf(changes, user.accountId, user.userId);
      if (member.role === 'owner') await keepAnOwner(changes, user.accountId, user.userId);
      const keyIds = await removeMember(changes, request, user, user.userId);
      await changes.audit.record({
        accountId: user.accountId,
        actor: userActor(request, user.userId),
        action: 'member.leave',
        target: { type: 'member', id: user.userId },
        before: { email: member.email, role: member.role },
        after: null,
      });
      return keyIds;
    });
    await deps.admin.keysRevoked(user.accountId, revoked);
    // The session moves to another account of the user, or ends.
    const [next] = await deps.storage.members.accountsOf(user.userId);
    if (next) await sessions.switchAccount(request, next.accountId);
    else await sessions.end(request, reply);
    return { object: 'member', user_id: user.userId, deleted: true, account_id: next?.accountId ?? null };
  });
}
