/**
 * Rate limits shared by every replica through Redis, with the semantics of the in-memory limiter (memory.ts):
 * per account, 61 one-second buckets of requests and of tokens, kept in two hashes (field = unix second). One
 * Lua script reads, decides and counts atomically on the server, using the server's clock (`TIME`) so replicas
 * with skewed clocks agree. An admission counts the prompt and the completion bound x choices (lowered to the
 * room left, as in memory.ts); what the answer did not use is given back later to the bucket it was counted in.
 *
 * Leasing keeps busy accounts off Redis. When an account is far from its limits and this replica has been
 * admitting several of its requests a second, the admission also asks for a lease: the script counts, in the
 * current second's buckets, up to 1/16 of what is free (and only while at least 256 requests stay free) for
 * that many more requests and prompt tokens not yet admitted, and returns how much it granted. The replica
 * then admits the account's next requests locally from the lease (lease.ts) until it runs out or the Redis
 * second it was counted in ends. Exactness holds because every admitted request is counted in Redis before it
 * is admitted, under the same check, and in the bucket of the second it is admitted in: a request admitted in
 * a later second than its count would leave the window a second early, hence the expiry at the end of that
 * second, measured from the reply's arrival minus a margin. A request whose prompt and whole completion bound do
 * not fit the leased tokens goes to Redis. Unused leases, and the tokens answers did not use (`giveBack`), are
 * given back (subtracted from the second they were counted in, if that bucket still exists) with the account's
 * next call, or by a timer, at most FLUSH_MS later. Until given back, leases held by other replicas make Redis
 * refuse a little early near the limit: stricter, never looser.
 *
 * An admission in the last 50 ms of a second that asks for a lease gets one for the next second, counted in that
 * second's bucket and usable until it ends: a request admitted from it in the current second's last milliseconds
 * is counted a second late, so it leaves the window late, which is stricter, never looser. Without it every
 * admission in those milliseconds went to Redis. An account that is still leasing when its lease's second ends
 * gets the next second's lease by a timer, just after that second starts ('lease': counts no request of its own),
 * so a client at a few requests a second (a chat UI's streams) does not wait for Redis on the first request of
 * every second. The timer is set by an admission, so it stops one second after the account does.
 *
 * Failure policy: FAIL OPEN. When Redis is unreachable, or a command errors or takes longer than
 * `commandTimeoutMs` (200 ms by default), the request is admitted with a decision showing the full limit as
 * remaining, `onError` is called (the app counts it in `tollgate_redis_errors_total`), and serving goes on;
 * ioredis reconnects by itself. Calls fail fast while disconnected (no offline queue), and admit/giveBack
 * never throw. Availability wins over strictness: during an outage, limits are not enforced (and give-backs that
 * fail to reach Redis are dropped: stricter). A decision made failing open names no second, so nothing is given
 * back for it.
 */
import { SpanKind, tracingEnabled, withSpan } from '../observability/index.js';
import type { Redis, Result } from 'ioredis';
import { connectFailFast } from '../redis/index.js';
import {
  AccountLease,
  LEASE_LATEST_MS,
  LEASE_SHARE,
  MIN_FREE_REQUESTS,
  admitReply,
  peekDecision,
  window,
  type LeaseSettlement,
} from './lease.js';
import type { CompletionAsk, RateDecision, RateLimiter, RateLimits } from './types.js';

const BUCKETS = 61;
const FLUSH_MS = 50;
/** A renewal is sent this long after the local estimate of the second's end (which is already late by half a round trip). */
const RENEW_AFTER_MS = 2;

/**
 * KEYS: requests hash, tokens hash. ARGV: 'settle', settlement (lease.ts) -> {}; or 'admit' (or 'lease': the same
 * with no request of its own to count; or 'peek': the decision for a request, counting nothing), requests per minute, tokens per minute, prompt tokens, completion bound,
 * choices, lease requests wanted, lease tokens wanted, settlement ->
 * {allowed, requests used, tokens used, request wait ms, token wait ms, request reset ms, token reset ms,
 * lease requests, lease tokens, second, ms within the second, the second the lease is counted in, the completion
 * bound counted}. Used counts include the lease.
 */
const SCRIPT = `
local WINDOW = ${BUCKETS}
local time = redis.call('TIME')
local now = tonumber(time[1])
local msInSecond = math.floor(tonumber(time[2]) / 1000)
local nowMs = now * 1000 + msInSecond

-- Counts 'amount' in the bucket of 'second' and in the loaded window, which stays oldest first.
local function add(window, key, second, amount)
  if amount <= 0 then return end
  redis.call('HINCRBY', key, second, amount)
  local at = #window.buckets + 1
  while at > 1 and window.buckets[at - 1][1] > second do at = at - 1 end
  table.insert(window.buckets, at, { second, amount })
  window.used = window.used + amount
end

local function giveBack(key, second, amount)
  local counted = tonumber(redis.call('HGET', key, second))
  if counted == nil or amount <= 0 then return end
  if counted <= amount then redis.call('HDEL', key, second) else redis.call('HINCRBY', key, second, -amount) end
end

local function settle(i)
  for j = i + 1, i + 3 * tonumber(ARGV[i]), 3 do
    giveBack(KEYS[1], ARGV[j], tonumber(ARGV[j + 1]))
    giveBack(KEYS[2], ARGV[j], tonumber(ARGV[j + 2]))
  end
end

if ARGV[1] == 'settle' then
  settle(2)
  return {}
end
settle(9)

-- The live buckets, oldest first, and their sum; stale buckets are deleted.
local function load(key)
  local flat = redis.call('HGETALL', key)
  local window, stale = { buckets = {}, used = 0 }, {}
  for i = 1, #flat, 2 do
    local second, amount = tonumber(flat[i]), tonumber(flat[i + 1])
    if second > now - WINDOW then
      table.insert(window.buckets, { second, amount })
      window.used = window.used + amount
    else
      table.insert(stale, flat[i])
    end
  end
  if #stale > 0 then redis.call('HDEL', key, unpack(stale)) end
  table.sort(window.buckets, function(a, b) return a[1] < b[1] end)
  return window
end

-- Milliseconds until 'needed' more fits under 'limit'.
local function waitFor(window, limit, needed)
  local excess = window.used + needed - limit
  if excess <= 0 then return 0 end
  for _, bucket in ipairs(window.buckets) do
    excess = excess - bucket[2]
    if excess <= 0 then return (bucket[1] + WINDOW) * 1000 - nowMs end
  end
  return WINDOW * 1000
end

local rpm, tpm, prompt = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local bound, choices = tonumber(ARGV[5]), tonumber(ARGV[6])
if bound <= 0 then choices = 0 end
local wantRequests, wantTokens = tonumber(ARGV[7]), tonumber(ARGV[8])
local own = ARGV[1] == 'lease' and 0 or 1
local peek = ARGV[1] == 'peek'
local requests, tokens = load(KEYS[1]), load(KEYS[2])
-- At least the prompt and one token per choice must fit; the completion bound is what room is left.
local requestWait, tokenWait = waitFor(requests, rpm, own), waitFor(tokens, tpm, prompt + choices)
local allowed = requestWait == 0 and tokenWait == 0
local leaseRequests, leaseTokens, granted = 0, 0, 0
-- Late in a second the lease is for the next one, counted in its bucket (see the file's comment).
local leaseSecond = msInSecond <= ${LEASE_LATEST_MS} and now or now + 1
if allowed and not peek then
  if choices > 0 then granted = math.min(bound, math.floor((tpm - tokens.used - prompt) / choices)) end
  local counted = prompt + granted * choices
  local freeRequests, freeTokens = rpm - requests.used - own, tpm - tokens.used - counted
  if wantRequests > 0 and freeRequests >= ${MIN_FREE_REQUESTS} and freeTokens > 0 then
    leaseRequests = math.min(wantRequests, math.floor(freeRequests / ${LEASE_SHARE}))
    leaseTokens = math.min(wantTokens, math.floor(freeTokens / ${LEASE_SHARE}))
    if leaseTokens < wantTokens then leaseRequests = math.floor(leaseRequests * leaseTokens / wantTokens) end
    if leaseRequests == 0 then leaseTokens = 0 end
  end
  add(requests, KEYS[1], now, own)
  add(tokens, KEYS[2], now, counted)
  add(requests, KEYS[1], leaseSecond, leaseRequests)
  add(tokens, KEYS[2], leaseSecond, leaseTokens)
  redis.call('EXPIRE', KEYS[1], WINDOW + 1)
  redis.call('EXPIRE', KEYS[2], WINDOW + 1)
end
return { allowed and 1 or 0, requests.used, tokens.used, requestWait, tokenWait,
  waitFor(requests, rpm, rpm), waitFor(tokens, tpm, tpm), leaseRequests, leaseTokens, now, msInSecond, leaseSecond,
  granted }
`;

type RunScript = (requestsKey: string, tokensKey: string, ...args: Array<string | number>) => Promise<unknown>;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    /** SCRIPT, defined on the limiter's connection by its constructor. */
    tollgateRateLimit(
      requestsKey: string,
      tokensKey: string,
      ...args: Array<string | number>
    ): Result<unknown, Context>;
  }
}

export interface RedisRateLimiterOptions {
  url: string;
  /** Prepended to every key; default 'tg:'. */
  prefix?: string;
  /** Called when a command fails and the limiter fails open. */
  onError?: (error: unknown) => void;
  commandTimeoutMs?: number;
}

export class RedisRateLimiter implements RateLimiter {
  private readonly redis: Redis;
  private readonly run: RunScript;
  private readonly prefix: string;
  private readonly onError: (error: unknown) => void;
  /** Settles on the first connection or after one command timeout, so calls made right at startup do not fail open needlessly. */
  private readonly started: Promise<void>;
  private readonly accounts = new Map<string, AccountLease>();
  /** Renewals in flight, awaited by close (a lease installed after close would never be given back). */
  private readonly renewals = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(options: RedisRateLimiterOptions) {
    const timeoutMs = options.commandTimeoutMs ?? 200;
    this.prefix = options.prefix ?? 'tg:';
    this.onError = options.onError ?? (() => {});
    ({ redis: this.redis, ready: this.started } = connectFailFast(options.url, timeoutMs, {
      enableAutoPipelining: true,
    }));
    this.redis.defineCommand('tollgateRateLimit', { numberOfKeys: 2, lua: SCRIPT });
    const run: RunScript = this.redis.tollgateRateLimit.bind(this.redis);
    this.run = (...args) =>
      tracingEnabled()
        ? withSpan(
            'redis tollgateRateLimit',
            { 'db.system': 'redis', 'db.operation.name': 'EVALSHA' },
            () => run(...args),
            SpanKind.CLIENT,
          )
        : run(...args);
    void this.started.then(() => {
      if (this.closed) return;
      this.timer = setInterval(() => void this.settleDue(false), FLUSH_MS);
      this.timer.unref();
    });
  }

  async peek(accountId: string, limits: RateLimits): Promise<RateDecision> {
    await this.started;
    const account = this.accounts.get(accountId);
    if (account?.could(limits, 1, performance.now())) return allowedWithoutRedis(limits);
    // What answers gave back and this replica has not sent yet goes with the peek, as with an admission: else a
    // large body right after a request with a large completion bound is refused for tokens already returned.
    const settlement = account?.settle(performance.now(), true);
    try {
      const args = [limits.requestsPerMinute, limits.tokensPerMinute, 1, 0, 0, 0, 0, ...(settlement?.args ?? [0])];
      return peekDecision(admitReply(await this.run(...this.keys(accountId), 'peek', ...args)), limits);
    } catch (error) {
      this.onError(error);
      return allowedWithoutRedis(limits);
    } finally {
      settlement?.done();
    }
  }

  async admit(
    accountId: string,
    limits: RateLimits,
    promptTokens: number,
    completion?: CompletionAsk,
  ): Promise<RateDecision> {
    const prompt = wholeTokens(promptTokens);
    const bound = wholeTokens(completion?.bound ?? 0);
    const ask = bound > 0 ? { bound, choices: Math.max(1, wholeTokens(completion!.choices)) } : undefined;
    await this.started;
    const account = this.account(accountId);
    const local = account.take(limits, prompt, ask, performance.now());
    if (local) return this.renewing(accountId, account, limits, local);
    if (account.inflight) {
      await account.inflight;
      const leased = account.take(limits, prompt, ask, performance.now());
      if (leased) return this.renewing(accountId, account, limits, leased);
    }
    const now = performance.now();
    const [wantRequests, wantTokens] = account.want(now);
    const settlement = account.settle(now, true);
    let flight: Promise<void> | undefined;
    try {
      const args = [
        limits.requestsPerMinute,
        limits.tokensPerMinute,
        prompt,
        bound,
        ask?.choices ?? 0,
        wantRequests,
        wantTokens,
        ...(settlement?.args ?? [0]),
      ];
      const decided = this.run(...this.keys(accountId), 'admit', ...args).then((reply) =>
        account.record(admitReply(reply), limits, prompt, ask?.choices ?? 0, performance.now()),
      );
      if (wantRequests > 0) account.inflight = flight = decided.then(noop, noop);
      return this.renewing(accountId, account, limits, await decided);
    } catch (error) {
      this.onError(error);
      return {
        allowed: true,
        retryAfterSeconds: 1,
        requests: window(limits.requestsPerMinute, 0, 0),
        tokens: window(limits.tokensPerMinute, 0, 0),
        completionBound: bound,
      };
    } finally {
      settlement?.done();
      if (flight && account.inflight === flight) account.inflight = undefined;
    }
  }

  /** Resolves once the give-back was sent (with the account's next call, within FLUSH_MS, or on close). */
  async giveBack(accountId: string, second: number, tokens: number, requests = 0): Promise<void> {
    const whole = Math.max(0, Math.floor(tokens) || 0);
    const wholeRequests = Math.max(0, Math.floor(requests) || 0);
    if ((whole === 0 && wholeRequests === 0) || !Number.isInteger(second)) return;
    const flushed = this.account(accountId).giveBack(second, whole, wholeRequests);
    if (this.closed) void this.settleDue(true);
    await flushed;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    for (const account of this.accounts.values()) clearTimeout(account.renewal);
    await this.started;
    await Promise.all(this.renewals);
    await this.settleDue(true);
    if (this.redis.status === 'ready') await this.redis.quit().catch(() => this.redis.disconnect());
    else this.redis.disconnect();
  }

  /** Sends, in one pipeline, every account's give-backs and expired (or, on close, all) leases. */
  private async settleDue(all: boolean): Promise<void> {
    const now = performance.now();
    const calls: Array<Promise<void>> = [];
    for (const [accountId, account] of this.accounts) {
      const settlement = all || account.hasWork(now) ? account.settle(now, all) : undefined;
      if (settlement) calls.push(this.settle(accountId, settlement));
      else if (account.idle(now)) this.accounts.delete(accountId);
    }
    await Promise.all(calls);
  }

  private async settle(accountId: string, settlement: LeaseSettlement): Promise<void> {
    try {
      await this.run(...this.keys(accountId), 'settle', ...settlement.args);
    } catch (error) {
      this.onError(error);
    } finally {
      settlement.done();
    }
  }

  /** Passes `decision` through, first setting the timer that renews a leasing account's lease next second. */
  private renewing(accountId: string, account: AccountLease, limits: RateLimits, decision: RateDecision): RateDecision {
    if (account.renewal || this.closed) return decision;
    const now = performance.now();
    if (account.want(now)[0] === 0) return decision;
    account.renewal = setTimeout(
      () => {
        account.renewal = undefined;
        const renewal = this.renew(accountId, account, limits).finally(() => this.renewals.delete(renewal));
        this.renewals.add(renewal);
      },
      Math.max(0, account.nextSecondAt - now + RENEW_AFTER_MS),
    );
    account.renewal.unref();
    return decision;
  }

  /** The next second's lease, asked for without a request of its own; skipped if one is held or being asked for. */
  private async renew(accountId: string, account: AccountLease, limits: RateLimits): Promise<void> {
    const now = performance.now();
    if (this.closed || account.inflight || account.leased(now)) return;
    const [wantRequests, wantTokens] = account.want(now);
    if (wantRequests === 0) return;
    const settlement = account.settle(now, true);
    const call = this.run(
      ...this.keys(accountId),
      'lease',
      limits.requestsPerMinute,
      limits.tokensPerMinute,
      0,
      0,
      0,
      wantRequests,
      wantTokens,
      ...(settlement?.args ?? [0]),
    );
    const flight = call
      .then((reply) => void account.record(admitReply(reply), limits, 0, 0, performance.now(), false))
      .catch((error: unknown) => this.onError(error));
    account.inflight = flight;
    try {
      await flight;
    } finally {
      settlement?.done();
      if (account.inflight === flight) account.inflight = undefined;
    }
  }

  private account(accountId: string): AccountLease {
    let account = this.accounts.get(accountId);
    if (!account) this.accounts.set(accountId, (account = new AccountLease()));
    return account;
  }

  private keys(accountId: string): [string, string] {
    // The hash tag puts both keys in one cluster slot, where a script's keys must be.
    const base = `${this.prefix}rl:{${accountId}}`;
    return [`${base}:req`, `${base}:tok`];
  }
}

function noop(): void {}

/** An allowed peek's decision where Redis was not asked (a lease has room, or Redis failed: fail open). */
function allowedWithoutRedis(limits: RateLimits): RateDecision {
  return {
    allowed: true,
    retryAfterSeconds: 1,
    requests: window(limits.requestsPerMinute, 0, 0),
    tokens: window(limits.tokensPerMinute, 0, 0),
    completionBound: 0,
  };
}

/** HINCRBY takes integers only. */
function wholeTokens(tokens: number): number {
  return Number.isFinite(tokens) && tokens > 0 ? Math.ceil(tokens) : 0;
}
