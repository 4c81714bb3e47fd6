/**
 * Self-serve sign-up and email verification. Where SMTP is configured, sign-up always answers 202 "check your
 * email" (a registered email answers exactly like a new one); the emailed link, followed once, verifies the email,
 * sets the password chosen with that sign-up, credits the sign-up grant once and signs in. Without SMTP the account
 * opens at once, with the grant only when `signup.grant_without_verification` is on. Either way one mailbox gets one
 * grant, however its address is spelled.
 */
import { createHash, randomBytes } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { normalizeEmail } from '../admin/index.js';
import { publicBase, publicBaseMissing } from '../config/index.js';
import { GatewayError, invalidRequest } from '../errors/index.js';
import type { HttpDeps } from '../http/index.js';
import { renderKey } from '../http/render.js';
import { typed } from '../http/routes/typed.js';
import { Credentials, signinThrottle } from './auth-routes.js';
import { alreadyRegisteredMail, smtpMailer, verificationMail, type Mail, type Mailer } from './mail.js';
import { hashPassword, passwordWeakness } from './passwords.js';
import type { Sessions } from './session.js';

const HOUR_MS = 3_600_000;
const VerifyBody = Type.Object(
  { token: Type.String({ minLength: 1, maxLength: 128 }) },
  { additionalProperties: false },
);
const CHECK_YOUR_EMAIL = { signed_in: false, verification_sent: true };

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

export function signupRoutes(app: FastifyInstance, deps: HttpDeps, sessions: Sessions): void {
  const scope = typed(app);
  const { signup, credits, server } = deps.config;
  const mailer = smtpMailer(deps.config.smtp);
  const throttle = signinThrottle(deps);
  const users = deps.storage.users;

  /** Sign-up attempts per client address per hour, counted in the database (so shared by replicas). */
  async function limitPerAddress(request: FastifyRequest): Promise<void> {
    const now = Date.now();
    const { count, oldest } = await users.countSignupAttempt(request.ip, now, now - HOUR_MS);
    void users.deleteOldSignupAttempts(now - HOUR_MS).catch(() => undefined);
    if (count > signup.per_ip_per_hour) {
      request.log.warn({ ip: request.ip, attempts: count }, 'sign-ups from one address throttled');
      throw new GatewayError('rate_limit_exceeded', {
        message: 'Too many sign-ups from this address; try again later',
        retryAfter: Math.max(1, Math.ceil((oldest + HOUR_MS - now) / 1000)),
      });
    }
  }

  /**
   * The sign-up grant, unless an account of the same mailbox had it (`a.b+x@gmail.com` and `ab@googlemail.com` are
   * one: storage/mailboxes.ts). The claim of the mailbox decides, race-free; it is given back if the credit fails.
   */
  async function grantOnce(accountId: string, email: string): Promise<void> {
    if (credits.signup_grant <= 0 || !(await users.claimSignupGrant(accountId, email, Date.now()))) return;
    try {
      await deps.admin.grantSignupCredit(accountId);
    } catch (error) {
      await users.releaseSignupGrant(accountId, email).catch(() => undefined);
      throw error;
    }
  }

  /** Sent after the answer, so its time never tells a registered email from a new one. */
  function sendLater(request: FastifyRequest, send: Mailer, mail: Mail): void {
    send.send(mail).catch((error: unknown) => request.log.error({ err: error }, 'sign-up email could not be sent'));
  }

  async function emailLink(
    request: FastifyRequest,
    base: string,
    send: Mailer,
    accountId: string,
    email: string,
    passwordHash: string,
  ): Promise<void> {
    const token = randomBytes(32).toString('base64url');
    const now = Date.now();
    await users.createVerification({
      tokenHash: sha256(token),
      accountId,
      passwordHash,
      createdAt: now,
      expiresAt: now + signup.verification_ttl_hours * HOUR_MS,
    });
    // Only the mailbox's owner reads whether its grant was had already.
    const credit = (await users.signupGrantTaken(email, accountId)) ? 0 : credits.signup_grant;
    sendLater(
      request,
      send,
      verificationMail(email, `${base}/dashboard/verify#${token}`, signup.verification_ttl_hours, credit),
    );
  }

  /** Where the emailed links point: never a `Host` nobody vouched for (config/public-url.ts). */
  function linkBase(request: FastifyRequest): string {
    const base = publicBase(server, request);
    if (!base) throw invalidRequest(publicBaseMissing('Signing up', request));
    return base;
  }

  scope.post('/api/signup', { schema: { body: Credentials }, config: { anonymous: true } }, async (request, reply) => {
    if (!deps.config.dashboard.signup)
      throw new GatewayError('permission_denied', {
        message: 'Sign-up is closed on this gateway; ask its operator for an account',
      });
    // Before anything is stored: a sign-up that cannot be emailed its link is refused whole.
    const base = mailer ? linkBase(request) : '';
    const { body } = request;
    const email = normalizeEmail(body.email);
    await throttle(request, email);
    const weakness = passwordWeakness(body.password);
    if (weakness) throw invalidRequest(weakness, 'password');
    await limitPerAddress(request);
    const passwordHash = await hashPassword(body.password);
    // A person who joined by invitation signs in with that email; they have no account of their own to open here.
    const invited = !(await deps.storage.accounts.getByEmail(email)) && (await users.byEmail(email));
    if (invited && !mailer) throw invalidRequest(`${email} is already registered: sign in instead`, 'email');
    if (invited && mailer) {
      sendLater(request, mailer, alreadyRegisteredMail(email, `${base}/dashboard/signin`));
      reply.code(202);
      return CHECK_YOUR_EMAIL;
    }

    if (!mailer) {
      const account = await deps.admin.openAccount({ email }, { grant: false });
      await users.insert(account.id, passwordHash, Date.now());
      if (signup.grant_without_verification) await grantOnce(account.id, email);
      const key = await deps.admin.createKey(account.id, { name: 'default' });
      const csrfToken = await sessions.start(request, reply, account.id);
      reply.code(201);
      // The account's first key, made with it: shown here once, like every new key.
      return {
        signed_in: true,
        email: account.email,
        account_id: account.id,
        csrf_token: csrfToken,
        first_key: { ...renderKey(key.record), key: key.key },
      };
    }

    const existing = await deps.storage.accounts.getByEmail(email);
    if (!existing) {
      const account = await deps.admin.openAccount({ email }, { grant: false });
      await users.insert(account.id, passwordHash, Date.now(), 'pending');
      await emailLink(request, base, mailer, account.id, email, passwordHash);
    } else {
      const user = await users.user(existing.id);
      if (user?.emailStatus === 'verified')
        sendLater(request, mailer, alreadyRegisteredMail(email, `${base}/dashboard/signin`));
      else {
        // An operator-made account (no dashboard user yet) or one whose email is not verified: the link proves the
        // mailbox, and only then is this sign-up's password set.
        if (!user) await users.insert(existing.id, passwordHash, Date.now(), 'pending');
        await emailLink(request, base, mailer, existing.id, email, passwordHash);
      }
    }
    reply.code(202);
    return CHECK_YOUR_EMAIL;
  });

  scope.post('/api/verify', { schema: { body: VerifyBody }, config: { anonymous: true } }, async (request, reply) => {
    const { token } = request.body;
    const now = Date.now();
    const claim = await users.useVerification(sha256(token), now);
    if (!claim) throw invalidRequest('This link is unknown or has expired; sign up again to get a new one', 'token');
    // A second click, or another link of an account verified meanwhile: nothing more to do.
    if (claim === 'used' || !(await users.markVerified(claim.accountId, claim.passwordHash, now)))
      return { signed_in: false, verified: true };
    const { accountId } = claim;
    // At most one sign-up grant per account, whichever way it was opened, and per mailbox.
    const opened = (await deps.storage.accounts.get(accountId))!;
    if (!(await deps.storage.ledger.hasEntry(accountId, 'grant'))) await grantOnce(accountId, opened.email);
    const hasKey = (await deps.storage.keys.listByAccount(accountId)).length > 0;
    const key = hasKey ? undefined : await deps.admin.createKey(accountId, { name: 'default' });
    const account = (await deps.storage.accounts.get(accountId))!;
    const csrfToken = await sessions.start(request, reply, accountId);
    return {
      signed_in: true,
      verified: true,
      email: account.email,
      account_id: accountId,
      csrf_token: csrfToken,
      ...(key ? { first_key: { ...renderKey(key.record), key: key.key } } : {}),
    };
  });
}
