/**
 * Invitations: an owner or admin invites an email with a role; the link `<base>/dashboard/invite#<token>` is
 * emailed where SMTP is configured, else returned to the inviter to pass on. Accepting adds the membership: an
 * existing person must be signed in as the invited email; a new person chooses a password and is signed in.
 * Every change is audited in its transaction.
 */
import { createHash, randomBytes } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { normalizeEmail } from '../admin/index.js';
import { isRole } from '../auth/index.js';
import { publicBase, publicBaseMissing } from '../config/index.js';
import { GatewayError, invalidRequest } from '../errors/index.js';
import type { HttpDeps } from '../http/index.js';
import { typed } from '../http/routes/typed.js';
import type { Invitation } from '../storage/index.js';
import { newId } from '../storage/values.js';
import { invitationMail, smtpMailer } from './mail.js';
import { hashPassword, PASSWORD_MAX, passwordWeakness } from './passwords.js';
import { userActor, type Sessions } from './session.js';

const TTL_MS = 7 * 24 * 3_600_000;
const InviteBody = Type.Object(
  { email: Type.String({ minLength: 1, maxLength: 320 }), role: Type.String() },
  { additionalProperties: false },
);
const IdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });
const AcceptBody = Type.Object(
  {
    token: Type.String({ minLength: 1, maxLength: 128 }),
    password: Type.Optional(Type.String({ minLength: 1, maxLength: PASSWORD_MAX })),
  },
  { additionalProperties: false },
);

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

export function renderInvitation(invitation: Invitation): Record<string, unknown> {
  return {
    object: 'invitation',
    id: invitation.id,
    email: invitation.email,
    role: invitation.role,
    expires: Math.floor(invitation.expiresAt / 1000),
  };
}

export function invitationRoutes(app: FastifyInstance, deps: HttpDeps, sessions: Sessions): void {
  const scope = typed(app);
  const mailer = smtpMailer(deps.config.smtp);

  scope.get('/api/members/invitations', async (request) => {
    const { accountId } = await sessions.require(request, 'members');
    const pending = await deps.storage.invitations.pending(accountId, Date.now());
    return { object: 'list', data: pending.map(renderInvitation) };
  });

  scope.post('/api/members/invitations', { schema: { body: InviteBody } }, async (request, reply) => {
    const user = await sessions.require(request, 'members');
    const { role } = request.body;
    let email: string;
    try {
      email = normalizeEmail(request.body.email);
    } catch {
      throw invalidRequest("Invalid value for 'email'", 'email');
    }
    if (!isRole(role)) throw invalidRequest("Invalid value for 'role': owner, admin, member or billing", 'role');
    if (role === 'owner' && user.role !== 'owner')
      throw new GatewayError('permission_denied', { message: 'Only an owner may invite an owner' });
    const base = publicBase(deps.config.server, request);
    if (!base) throw invalidRequest(publicBaseMissing('Inviting', request));
    const token = randomBytes(32).toString('base64url');
    const now = Date.now();
    const invitation: Invitation = {
      id: newId('inv'),
      accountId: user.accountId,
      email,
      role,
      invitedBy: user.userId,
      createdAt: now,
      expiresAt: now + TTL_MS,
    };
    await deps.storage.atomically(async (changes) => {
      const members = await changes.members.list(user.accountId);
      if (members.some((m) => m.email === email))
        throw invalidRequest(`${email} is already a member of this account`, 'email');
      await changes.invitations.insert({ ...invitation, tokenHash: sha256(token) });
      await changes.audit.record({
        accountId: user.accountId,
        actor: userActor(request, user.userId),
        action: 'member.invite',
        target: { type: 'invitation', id: invitation.id },
        before: null,
        after: { email, role },
        at: now,
      });
    });
    const link = `${base}/dashboard/invite#${token}`;
    const account = await deps.storage.accounts.get(user.accountId);
    if (mailer) {
      mailer
        .send(invitationMail(email, link, account?.email ?? '', role))
        .catch((error: unknown) => request.log.error({ err: error }, 'invitation email could not be sent'));
    }
    return reply.code(201).send({ ...renderInvitation(invitation), ...(mailer ? {} : { link }) });
  });

  scope.delete('/api/members/invitations/:id', { schema: { params: IdParams } }, async (request) => {
    const user = await sessions.require(request, 'members');
    const now = Date.now();
    await deps.storage.atomically(async (changes) => {
      const invitation = await changes.invitations.get(user.accountId, request.params.id, now);
      if (!invitation)
        throw new GatewayError('not_found', { message: `No invitation ${request.params.id}`, param: 'id' });
      await changes.invitations.revoke(invitation.id, now);
      await changes.audit.record({
        accountId: user.accountId,
        actor: userActor(request, user.userId),
        action: 'member.invite_revoke',
        target: { type: 'invitation', id: invitation.id },
        before: { email: invitation.email, role: invitation.role },
        after: null,
        at: now,
      });
    });
    return { object: 'invitation', id: request.params.id, deleted: true };
  });

  scope.post(
    '/api/invitations/accept',
    { schema: { body: AcceptBody }, config: { anonymous: true } },
    async (request, reply) => {
      const { token, password } = request.body;
      const now = Date.now();
      const invitation = await deps.storage.invitations.byToken(sha256(token), now);
      if (!invitation) throw invalidRequest('This invitation link is unknown, used, revoked or expired', 'token');
      const existing = await deps.storage.users.byEmail(invitation.email);
      const signedIn = await sessions.current(request);
      let userId: string;
      let passwordHash: string | undefined;
      if (existing) {
        if (signedIn?.userId !== existing.id)
          throw new GatewayError('permission_denied', { message: `Sign in as ${invitation.email} to accept` });
        userId = existing.id;
      } else {
        if (password === undefined) throw invalidRequest('Choose a password to join', 'password');
        const weakness = passwordWeakness(password);
        if (weakness) throw invalidRequest(weakness, 'password');
        passwordHash = await hashPassword(password);
        userId = newId('usr');
      }
      await deps.storage.atomically(async (changes) => {
        if (!(await changes.invitations.accept(invitation.id, now)))
          throw invalidRequest('This invitation link is unknown, used, revoked or expired', 'token');
        if (passwordHash !== undefined) {
          // Emailed links prove the address; a link passed on by hand does not.
          const emailStatus = mailer ? 'verified' : 'unverified';
          await changes.users.insertPerson({ id: userId, email: invitation.email, passwordHash, emailStatus }, now);
        }
        if (await changes.members.add(invitation.accountId, userId, invitation.role, now)) {
          await changes.audit.record({
            accountId: invitation.accountId,
            actor: userActor(request, userId),
            action: 'member.join',
            target: { type: 'member', id: userId },
            before: null,
            after: { email: invitation.email, role: invitation.role },
            at: now,
          });
        }
      });
      let csrfToken: string;
      if (signedIn) {
        await sessions.switchAccount(request, invitation.accountId);
        csrfToken = signedIn.csrfToken;
      } else {
        csrfToken = await sessions.start(request, reply, invitation.accountId, userId);
      }
      const account = await deps.storage.accounts.get(invitation.accountId);
      return {
        signed_in: true,
        email: account?.email,
        account_id: invitation.accountId,
        role: (await deps.storage.members.role(invitation.accountId, userId)) ?? invitation.role,
        csrf_token: csrfToken,
      };
    },
  );
}
