/** Sign-in, sign-out and the session probe the page starts with (sign-up: signup-routes.ts). */
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { normalizeEmail } from '../admin/index.js';
import { capabilitiesOf } from '../auth/index.js';
import { GatewayError } from '../errors/index.js';
import type { HttpDeps } from '../http/index.js';
import { typed } from '../http/routes/typed.js';
import type { Membership } from '../storage/members.js';
import { PASSWORD_MAX, verifyNothing, verifyPassword } from './passwords.js';
import type { Sessions } from './session.js';

export const Credentials = Type.Object(
  {
    email: Type.String({ minLength: 1, maxLength: 320 }),
    password: Type.String({ minLength: 1, maxLength: PASSWORD_MAX }),
  },
  { additionalProperties: false },
);
export type Credentials = Static<typeof Credentials>;

/**
 * Attempts per minute per email, and ten times more per client address (offices share one address);
 * shared by replicas through the rate limiter.
 */
export function signinThrottle(deps: HttpDeps): (request: FastifyRequest, email: string) => Promise<void> {
  const perEmail = deps.config.dashboard.signin_attempts_per_minute;
  return async (request, email) => {
    const checks: Array<[string, number]> = [
      [`dashboard-signin:ip:${request.ip}`, perEmail * 10],
      [`dashboard-signin:email:${email}`, perEmail],
    ];
    for (const [subject, requestsPerMinute] of checks) {
      const decision = await deps.limiter.admit(subject, { requestsPerMinute, tokensPerMinute: 1_000_000_000 }, 0);
      if (!decision.allowed) {
        throw new GatewayError('rate_limit_exceeded', {
          message: 'Too many sign-in attempts; try again later',
          retryAfter: decision.retryAfterSeconds,
        });
      }
    }
  };
}

export function authRoutes(app: FastifyInstance, deps: HttpDeps, sessions: Sessions): void {
  const scope = typed(app);
  const settings = deps.config.dashboard;
  const throttle = signinThrottle(deps);

  scope.get('/api/session', async (request, reply) => {
    reply.header('cache-control', 'no-store');
    const signedIn = await sessions.current(request);
    const account = signedIn && (await deps.storage.accounts.get(signedIn.accountId));
    if (signedIn && account) {
      return {
        signed_in: true,
        email: account.email,
        account_id: account.id,
        csrf_token: signedIn.csrfToken,
        signup_enabled: settings.signup,
        user: { id: signedIn.userId, email: (await deps.storage.users.emailOf(signedIn.userId)) ?? account.email },
        account: { id: account.id, email: account.email },
        role: signedIn.role,
        capabilities: capabilitiesOf(signedIn.role),
        accounts: renderMemberships(await deps.storage.members.accountsOf(signedIn.userId)),
      };
    }
    return {
      signed_in: false,
      csrf_token: sessions.anonymousToken(request, reply),
      signup_enabled: settings.signup,
      signup_credit:
        deps.config.smtp.url || deps.config.signup.grant_without_verification ? deps.config.credits.signup_grant : 0,
      verification_required: deps.config.smtp.url !== undefined,
    };
  });

  scope.post('/api/signin', { schema: { body: Credentials }, config: { anonymous: true } }, async (request, reply) => {
    const { email, password } = request.body;
    const normalized = normalizedOrUndefined(email);
    await throttle(request, normalized ?? email);
    // A person signs in, not an account: invited members have no account of their own.
    const user = normalized === undefined ? undefined : await deps.storage.users.byEmail(normalized);
    const valid = user ? await verifyPassword(password, user.passwordHash) : await verifyNothing(password);
    if (!user || !valid) throw new GatewayError('invalid_credentials');
    if (user.emailStatus === 'pending') {
      throw new GatewayError('permission_denied', {
        message: 'Confirm your email first: follow the link we sent you (sign up again for a new one)',
      });
    }
    // The session looks at the user's first account: one it owns, else the oldest membership.
    const userId = user.id;
    const [first] = await deps.storage.members.accountsOf(userId);
    if (!first)
      throw new GatewayError('permission_denied', {
        message: 'You are no longer a member of any account: ask an owner or admin to invite you again',
      });
    const csrfToken = await sessions.start(request, reply, first.accountId, userId);
    return { signed_in: true, email: first.email, account_id: first.accountId, csrf_token: csrfToken };
  });

  /** The accounts the signed-in user belongs to, for the account switcher. */
  scope.get('/api/accounts', async (request) => {
    const { userId } = await sessions.require(request);
    return { object: 'list', data: renderMemberships(await deps.storage.members.accountsOf(userId)) };
  });

  scope.post('/api/session/account', { schema: { body: SwitchAccount } }, async (request) => {
    await sessions.switchAccount(request, request.body.account_id);
    const { accountId, role } = await sessions.require(request);
    return { object: 'session', account_id: accountId, role, capabilities: capabilitiesOf(role) };
  });

  scope.post('/api/signout', async (request, reply) => {
    await sessions.end(request, reply);
    return reply.code(204).send();
  });
}

const SwitchAccount = Type.Object(
  { account_id: Type.String({ minLength: 1, maxLength: 100 }) },
  { additionalProperties: false },
);

function renderMemberships(memberships: Membership[]): Array<Record<string, unknown>> {
  return memberships.map((m) => ({ account_id: m.accountId, email: m.email, role: m.role }));
}

/** Sign-in answers a malformed email like an unknown one. */
function normalizedOrUndefined(email: string): string | undefined {
  try {
    return normalizeEmail(email);
  } catch {
    return undefined;
  }
}
