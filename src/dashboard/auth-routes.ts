/** Sign-up, sign-in, sign-out and the session probe the page starts with. */
import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { GatewayError, invalidRequest } from '../errors/index.js';
import type { HttpDeps } from '../http/index.js';
import { renderKey } from '../http/render.js';
import { PASSWORD_MAX, PASSWORD_MIN, hashPassword, verifyNothing, verifyPassword } from './passwords.js';
import type { Sessions } from './session.js';

const Credentials = Type.Object(
  { email: Type.String({ minLength: 1, maxLength: 320 }), password: Type.String({ minLength: 1, maxLength: PASSWORD_MAX }) },
  { additionalProperties: false },
);
type Credentials = Static<typeof Credentials>;

export function authRoutes(scope: FastifyInstance, deps: HttpDeps, sessions: Sessions): void {
  const settings = deps.config.dashboard;

  /**
   * Attempts per minute per email, and ten times as many per client address (offices share one address);
   * shared by replicas through the rate limiter.
   */
  async function throttle(request: FastifyRequest, email: string): Promise<void> {
    const perEmail = settings.signin_attempts_per_minute;
    const checks: Array<[string, number]> = [
      [`dashboard-signin:ip:${request.ip}`, perEmail * 10],
      [`dashboard-signin:email:${email}`, perEmail],
    ];
    for (const [subject, requestsPerMinute] of checks) {
      const decision = await deps.limiter.admit(subject, { requestsPerMinute, tokensPerMinute: 1_000_000_000 }, 0);
      if (!decision.allowed) {
        throw new GatewayError('rate_limit_exceeded', { message: 'Too many sign-in attempts; try again later', retryAfter: decision.retryAfterSeconds });
      }
    }
  }

  scope.get('/api/session', async (request, reply) => {
    reply.header('cache-control', 'no-store');
    const signedIn = await sessions.current(request);
    const account = signedIn && (await deps.storage.accounts.get(signedIn.accountId));
    if (signedIn && account) {
      return { signed_in: true, email: account.email, account_id: account.id, csrf_token: signedIn.csrfToken, signup_enabled: settings.signup };
    }
    return {
      signed_in: false,
      csrf_token: sessions.anonymousToken(request, reply),
      signup_enabled: settings.signup,
      signup_credit: deps.config.credits.signup_grant,
    };
  });

  scope.post('/api/signup', { schema: { body: Credentials }, config: { anonymous: true } }, async (request, reply) => {
    if (!settings.signup) throw new GatewayError('permission_denied', { message: 'Sign-up is closed on this gateway; ask its operator for an account' });
    const { email, password } = request.body as Credentials;
    const normalized = email.trim().toLowerCase();
    await throttle(request, normalized);
    if (password.length < PASSWORD_MIN) throw invalidRequest(`password must have at least ${PASSWORD_MIN} characters`, 'password');
    const passwordHash = await hashPassword(password);
    const { account, key } = await deps.admin.createAccount({ email: normalized });
    await deps.storage.users.insert(account.id, passwordHash, Date.now());
    const csrfToken = await sessions.start(request, reply, account.id);
    reply.code(201);
    // The account's first key, made with it: shown here once, like every new key.
    return { signed_in: true, email: account.email, account_id: account.id, csrf_token: csrfToken, first_key: { ...renderKey(key.record), key: key.key } };
  });

  scope.post('/api/signin', { schema: { body: Credentials }, config: { anonymous: true } }, async (request, reply) => {
    const { email, password } = request.body as Credentials;
    const normalized = email.trim().toLowerCase();
    await throttle(request, normalized);
    const account = await deps.storage.accounts.getByEmail(normalized);
    const stored = account && (await deps.storage.users.passwordHash(account.id));
    const valid = account && stored ? await verifyPassword(password, stored) : await verifyNothing(password);
    if (!account || !valid) throw new GatewayError('invalid_credentials');
    const csrfToken = await sessions.start(request, reply, account.id);
    return { signed_in: true, email: account.email, account_id: account.id, csrf_token: csrfToken };
  });

  scope.post('/api/signout', async (request, reply) => {
    await sessions.end(request, reply);
    return reply.code(204).send();
  });
}
