/**
 * One replica's local side of an account's rate-limit leases (see redis.ts): capacity already counted in Redis
 * and not yet used, what still has to be given back to Redis (unused leases, tokens answers did not use), and the
 * account's recent rate, which sizes the next lease. Times are `performance.now()` values.
 */
import type { CompletionAsk, RateDecision, RateLimits, RateWindow } from './types.js';

/** No lease unless, after the request, at least this many requests of the window are free. */
export const MIN_FREE_REQUESTS = 256;
/** A lease takes at most 1/LEASE_SHARE of the free requests and of the free tokens. */
export const LEASE_SHARE = 16;
/**
 * After this millisecond of a second the script leases for the next second instead: a lease for the current one
 * would expire almost at once, and every admission until the next second's lease would go to Redis.
 */
export const LEASE_LATEST_MS = 950;
/**
 * Admissions in the current or previous second from which this replica asks for a lease (so a client at two or
 * three requests a second, a chat UI's streams, skips most Redis round trips; one a second would only add a
 * give-back call)...
 */
const MIN_RATE = 2;
/** ...of at least this many requests, or GROWTH times the busier of those seconds. */
const MIN_LEASE = 8;
const GROWTH = 1.5;
/** A lease stops this long before the end of the Redis second it was counted in (latency and clock drift). */
const SAFETY_MS = 25;
/** How long an account without pending work is remembered, for its rate. */
const IDLE_MS = 5_000;

/** The script's reply to 'admit'. */
export type AdmitReply = [
  allowed: number,
  requestsUsed: number,
  tokensUsed: number,
  requestWait: number,
  tokenWait: number,
  requestReset: number,
  tokenReset: number,
  leaseRequests: number,
  leaseTokens: number,
  second: number,
  msInSecond: number,
  /** `second`, or the next one for a lease granted after LEASE_LATEST_MS. */
  leaseSecond: number,
  /** The completion bound per choice counted with the request. */
  completionBound: number,
];

/** The script's reply, checked to be an AdmitReply; throws on anything else (the caller fails open). */
export function admitReply(reply: unknown): AdmitReply {
  if (!isAdmitReply(reply))
    throw new Error('the rate-limit script answered with something other than thirteen numbers');
  return reply;
}

function isAdmitReply(reply: unknown): reply is AdmitReply {
  return Array.isArray(reply) && reply.length === 13 && reply.every((n) => typeof n === 'number');
}

interface Lease {
  /** The Redis second whose bucket counted the lease. */
  second: number;
  expiresAt: number;
  limits: RateLimits;
  /** Still unused. */
  requests: number;
  tokens: number;
  /** As Redis reported when granting, counting the whole lease. */
  requestsUsed: number;
  tokensUsed: number;
  requestReset: number;
  tokenReset: number;
}

/** Script arguments: the number of give-backs, then (second, requests, tokens) for each. */
export interface LeaseSettlement {
  args: number[];
  /** Called once the script call carrying the settlement finished, whatever its outcome. */
  done: () => void;
}

export class AccountLease {
  /** A call in flight that asks for a lease: admissions finding no lease wait for it instead of calling too. */
  inflight: Promise<unknown> | undefined;
  /** The timer that asks for the next second's lease (redis.ts). */
  renewal: NodeJS.Timeout | undefined;
  private lease: Lease | undefined;
  private flushed: { promise: Promise<void>; resolve: () => void } | undefined;
  private readonly returns = new Map<number, [requests: number, tokens: number]>();
  /** Admissions by this replica in the current and previous Redis second, for sizing leases. */
  private second = 0;
  private secondEndsAt = 0;
  private current = { requests: 0, tokens: 0 };
  private previous = { requests: 0, tokens: 0 };
  private freeRequests = 0;
  private lastUsed = performance.now();

  /**
   * Admits from the lease when it holds the prompt and the whole completion asked; otherwise returns undefined and
   * the request goes to Redis, which sees the whole window (and lowers the completion bound if it must).
   */
  take(
    limits: RateLimits,
    prompt: number,
    completion: CompletionAsk | undefined,
    now: number,
  ): RateDecision | undefined {
    this.lastUsed = now;
    const lease = this.lease;
    if (!lease) return undefined;
    if (now >= lease.expiresAt || !sameLimits(lease.limits, limits)) {
      this.retire();
      return undefined;
    }
    const completionBound = completion && completion.choices > 0 ? completion.bound : 0;
    const tokens = prompt + completionBound * (completion?.choices ?? 0);
    if (lease.requests < 1 || lease.tokens < tokens) return undefined;
    lease.requests -= 1;
    lease.tokens -= tokens;
    this.count(tokens);
    return {
      allowed: true,
      retryAfterSeconds: 1,
      requests: window(limits.requestsPerMinute, lease.requestsUsed - lease.requests, lease.requestReset),
      tokens: window(limits.tokensPerMinute, lease.tokensUsed - lease.tokens, lease.tokenReset),
      completionBound,
      second: lease.second,
    };
  }

  /** Whether the held lease could admit a request of `prompt` tokens now (takes nothing from it). */
  could(limits: RateLimits, prompt: number, now: number): boolean {
    const lease = this.lease;
    return (
      !!lease &&
      now < lease.expiresAt &&
      sameLimits(lease.limits, limits) &&
      lease.requests >= 1 &&
      lease.tokens >= prompt
    );
  }

  /** The lease to ask for with the next admission: [requests, tokens], zero when the account is idle or near its limits. */
  want(now: number): [number, number] {
    if (this.freeRequests < MIN_FREE_REQUESTS || now > this.secondEndsAt + 1000) return [0, 0];
    const recent = Math.max(this.previous.requests, this.current.requests);
    if (recent < MIN_RATE) return [0, 0];
    const requests = Math.max(MIN_LEASE, Math.ceil(GROWTH * recent));
    const averageTokens =
      (this.previous.tokens + this.current.tokens) / (this.previous.requests + this.current.requests);
    return [requests, Math.ceil(requests * averageTokens)];
  }

  /**
   * When the Redis second of the last reply ends, or that of the held lease if later (one asked for late in a
   * second), by this process's clock (late by up to half a round trip): when the next lease is needed.
   */
  get nextSecondAt(): number {
    return this.lease ? Math.max(this.secondEndsAt, this.lease.expiresAt + SAFETY_MS) : this.secondEndsAt;
  }

  /** A lease is held and still usable. */
  leased(now: number): boolean {
    return this.lease !== undefined && now < this.lease.expiresAt;
  }

  /**
   * Takes in the script's reply to an admission (or, `admission` false, to a renewal) and turns it into the
   * decision; `prompt` and `choices` are the admission's.
   */
  record(
    reply: AdmitReply,
    limits: RateLimits,
    prompt: number,
    choices: number,
    arrivedAt: number,
    admission = true,
  ): RateDecision {
    this.lastUsed = arrivedAt;
    const [
      allowed,
      requestsUsed,
      tokensUsed,
      requestWait,
      tokenWait,
      requestReset,
      tokenReset,
      leaseRequests,
      leaseTokens,
      second,
      ms,
      leaseSecond,
      completionBound,
    ] = reply;
    if (second > this.second) {
      this.previous = second === this.second + 1 ? this.current : { requests: 0, tokens: 0 };
      this.current = { requests: 0, tokens: 0 };
      this.second = second;
      this.secondEndsAt = arrivedAt + 1000 - ms;
    }
    this.freeRequests = limits.requestsPerMinute - requestsUsed;
    if (allowed === 1 && admission) this.count(prompt + completionBound * choices);
    if (leaseRequests > 0) {
      this.install({
        second: leaseSecond,
        expiresAt: arrivedAt + (leaseSecond - second + 1) * 1000 - ms - SAFETY_MS,
        limits,
        requests: leaseRequests,
        tokens: leaseTokens,
        requestsUsed,
        tokensUsed,
        requestReset,
        tokenReset,
      });
    }
    return {
      allowed: allowed === 1,
      retryAfterSeconds: Math.max(1, Math.ceil(Math.max(requestWait, tokenWait) / 1000)),
      requests: window(limits.requestsPerMinute, requestsUsed - leaseRequests, requestReset),
      tokens: window(limits.tokensPerMinute, tokensUsed - leaseTokens, tokenReset),
      completionBound,
      ...(allowed === 1 ? { second } : {}),
    };
  }

  /**
   * Queues `tokens` (and `requests`) to be taken out of the bucket of `second`; resolves once that reached Redis
   * (or failed to).
   */
  giveBack(second: number, tokens: number, requests = 0): Promise<void> {
    const [queuedRequests, queued] = this.returns.get(second) ?? [0, 0];
    this.returns.set(second, [queuedRequests + requests, queued + tokens]);
    this.lastUsed = performance.now();
    if (!this.flushed) {
      let resolve = () => {};
      const promise = new Promise<void>((settle) => (resolve = settle));
      this.flushed = { promise, resolve };
    }
    return this.flushed.promise;
  }

  hasWork(now: number): boolean {
    return this.returns.size > 0 || (this.lease !== undefined && now >= this.lease.expiresAt);
  }

  idle(now: number): boolean {
    return !this.lease && !this.inflight && !this.hasWork(now) && now - this.lastUsed > IDLE_MS;
  }

  /**
   * Takes out what the next call must send, retiring an expired lease (or the live one, with `retireLive`);
   * undefined when there is nothing.
   */
  settle(now: number, retireLive: boolean): LeaseSettlement | undefined {
    if (this.lease && (retireLive || now >= this.lease.expiresAt)) this.retire();
    if (this.returns.size === 0) return undefined;
    const args = [this.returns.size];
    for (const [second, [requests, tokens]] of this.returns) args.push(second, requests, tokens);
    const flushed = this.flushed;
    this.returns.clear();
    this.flushed = undefined;
    return { args, done: () => flushed?.resolve() };
  }

  private install(lease: Lease): void {
    const held = this.lease;
    // Replies on one connection arrive in execution order, so the newer reply's counts are the current ones.
    if (held && held.second === lease.second && sameLimits(held.limits, lease.limits)) {
      lease.requests += held.requests;
      lease.tokens += held.tokens;
      lease.expiresAt = Math.min(lease.expiresAt, held.expiresAt);
    } else {
      this.retire();
    }
    this.lease = lease;
  }

  private retire(): void {
    const lease = this.lease;
    this.lease = undefined;
    if (!lease || (lease.requests === 0 && lease.tokens === 0)) return;
    const [requests, tokens] = this.returns.get(lease.second) ?? [0, 0];
    this.returns.set(lease.second, [requests + lease.requests, tokens + lease.tokens]);
  }

  private count(tokens: number): void {
    this.current.requests += 1;
    this.current.tokens += tokens;
  }
}

/** The decision in a reply to 'peek' (which counts nothing and grants no lease). */
export function peekDecision(reply: AdmitReply, limits: RateLimits): RateDecision {
  const [allowed, requestsUsed, tokensUsed, requestWait, tokenWait, requestReset, tokenReset] = reply;
  return {
    allowed: allowed === 1,
    retryAfterSeconds: Math.max(1, Math.ceil(Math.max(requestWait, tokenWait) / 1000)),
    requests: window(limits.requestsPerMinute, requestsUsed, requestReset),
    tokens: window(limits.tokensPerMinute, tokensUsed, tokenReset),
    completionBound: 0,
  };
}

export function window(limit: number, used: number, resetMs: number): RateWindow {
  return { limit, remaining: Math.max(0, limit - used), resetMs };
}

function sameLimits(a: RateLimits, b: RateLimits): boolean {
  return a.requestsPerMinute === b.requestsPerMinute && a.tokensPerMinute === b.tokensPerMinute;
}
