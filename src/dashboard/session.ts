/**
 * Dashboard sessions and CSRF. The session cookie is HttpOnly, SameSite=Lax, Secure when the request came over
 * HTTPS, and holds a random token whose SHA-256 names the session row. Every state-changing request must come
 * from the dashboard's own origin (Origin / Sec-Fetch-Site) and carry the session's CSRF token in
 * `x-csrf-token`; before sign-in that token is the anonymous `tg_csrf` cookie's value (against login CSRF).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { CookieSerializeOptions } from '@fastify/cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError } from '../errors/index.js';
import { requireCapability, type Capability } from '../auth/index.js';
import { userIdOf, type Actor, type Role, type Storage } from '../storage/index.js';

export const SESSION_COOKIE = 'tg_session';
export const ANONYMOUS_COOKIE = 'tg_csrf';
const COOKIE_PATH = '/dashboard';

export interface SignedIn {
  /** The account the session is looking at. */
  accountId: string;
  userId: string;
  /** The user's role in that account now. */
  role: Role;
  csrfToken: string;
  tokenHash: string;
}

/** The signed-in person as the audit log's actor of a change made over this request. */
export function userActor(request: FastifyRequest, userId: string): Actor {
  return { type: 'user', id: userId, ip: request.ip };
}

const token = () => randomBytes(32).toString('base64url');
const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

function sameToken(presented: string | undefined, expected: string): boolean {
  if (!presented) return false;
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

export class Sessions {
  private readonly seen = new WeakMap<FastifyRequest, SignedIn | null>();

  constructor(
    private readonly storage: Storage,
    private readonly ttlMs: number,
  ) {}

  private cookieOptions(request: FastifyRequest, maxAgeSeconds?: number): CookieSerializeOptions {
    return {
      path: COOKIE_PATH,
      httpOnly: true,
      sameSite: 'lax',
      secure: request.protocol === 'https',
      ...(maxAgeSeconds !== undefined ? { maxAge: maxAgeSeconds } : {}),
    };
  }

  async current(request: FastifyRequest): Promise<SignedIn | undefined> {
    const known = this.seen.get(request);
    if (known !== undefined) return known ?? undefined;
    const cookie = request.cookies[SESSION_COOKIE];
    let signedIn: SignedIn | null = null;
    if (cookie) {
      const tokenHash = sha256(cookie);
      const session = await this.storage.users.session(tokenHash, Date.now());
      const role = session && (await this.storage.members.role(session.accountId, session.userId));
      if (session && role)
        signedIn = {
          accountId: session.accountId,
          userId: session.userId,
          role,
          csrfToken: session.csrfToken,
          tokenHash,
        };
    }
    this.seen.set(request, signedIn);
    return signedIn ?? undefined;
  }

  /** The signed-in user (401 without a session), allowed `capability` in the account it looks at (403). */
  async require(request: FastifyRequest, capability?: Capability): Promise<SignedIn> {
    const signedIn = await this.current(request);
    if (!signedIn) throw new GatewayError('not_signed_in');
    if (capability) requireCapability(signedIn.role, capability);
    return signedIn;
  }

  /** Starts a session (a fresh token: no session fixation) and returns its CSRF token. */
  async start(
    request: FastifyRequest,
    reply: FastifyReply,
    accountId: string,
    userId = userIdOf(accountId),
  ): Promise<string> {
    const now = Date.now();
    const cookie = token();
    const csrfToken = token();
    await this.storage.users.createSession({
      tokenHash: sha256(cookie),
      accountId,
      userId,
      csrfToken,
      createdAt: now,
      expiresAt: now + this.ttlMs,
    });
    reply.setCookie(SESSION_COOKIE, cookie, this.cookieOptions(request, Math.floor(this.ttlMs / 1000)));
    reply.clearCookie(ANONYMOUS_COOKIE, this.cookieOptions(request));
    // Housekeeping on a path that is rare and not latency-sensitive.
    void this.storage.users.deleteExpiredSessions(now).catch(() => undefined);
    return csrfToken;
  }

  /** Points the signed-in user's session at another of its accounts (403 when not a member of it). */
  async switchAccount(request: FastifyRequest, accountId: string): Promise<void> {
    const signedIn = await this.require(request);
    const role = await this.storage.members.role(accountId, signedIn.userId);
    if (!role) throw refused('You are not a member of that account');
    await this.storage.users.switchSessionAccount(signedIn.tokenHash, accountId);
    this.seen.set(request, { ...signedIn, accountId, role });
  }

  async end(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const signedIn = await this.current(request);
    if (signedIn) await this.storage.users.deleteSession(signedIn.tokenHash);
    reply.clearCookie(SESSION_COOKIE, this.cookieOptions(request));
  }

  /** The token a signed-out page sends with sign-in and sign-up; set in a cookie the first time. */
  anonymousToken(request: FastifyRequest, reply: FastifyReply): string {
    const existing = request.cookies[ANONYMOUS_COOKIE];
    if (existing && /^[A-Za-z0-9_-]{43}$/.test(existing)) return existing;
    const fresh = token();
    reply.setCookie(ANONYMOUS_COOKIE, fresh, this.cookieOptions(request));
    return fresh;
  }

  /** Refuses a state-changing request from another origin or without the right CSRF token. */
  async checkUnsafe(request: FastifyRequest, allowAnonymous: boolean): Promise<void> {
    const origin = request.headers.origin;
    const site = request.headers['sec-fetch-site'];
    const crossOrigin =
      origin !== undefined
        ? origin !== `${request.protocol}://${request.host}`
        : site !== undefined && site !== 'same-origin';
    if (crossOrigin) throw refused('Cross-origin requests to the dashboard are refused');
    const presented = request.headers['x-csrf-token'];
    const header = typeof presented === 'string' ? presented : undefined;
    const signedIn = await this.current(request);
    if (signedIn && sameToken(header, signedIn.csrfToken)) return;
    const anonymous = request.cookies[ANONYMOUS_COOKIE];
    if (allowAnonymous && anonymous && sameToken(header, anonymous)) return;
    throw refused('Missing or invalid CSRF token; reload the page and try again');
  }
}

function refused(message: string): GatewayError {
  return new GatewayError('permission_denied', { message });
}
