/**
 * Rate limits shared by every replica through Redis, with exactly the semantics of the in-memory limiter
 * (memory.ts): per account, 61 one-second buckets of requests and of tokens, kept as two hashes (field = unix
 * second). One Lua script reads, decides and counts atomically on the server, using the server's clock
 * (`TIME`) so replicas with skewed clocks agree.
 *
 * Failure policy: FAIL OPEN. When Redis is unreachable, or a command errors or takes longer than
 * `commandTimeoutMs` (200 ms by default), the request is admitted with a decision showing the full limit as
 * remaining, `onError` is called (the app counts it in `tollgate_redis_errors_total`), and serving goes on;
 * ioredis reconnects by itself. Calls fail fast while disconnected (no offline queue), and admit/addTokens
 * never throw. Availability wins over strictness: during an outage, limits are not enforced.
 */
import { SpanKind, tracingEnabled, withSpan } from '../observability/index.js';
import type { Redis } from 'ioredis';
import { connectFailFast } from '../redis/index.js';
import type { RateDecision, RateLimiter, RateLimits, RateWindow } from './types.js';

const BUCKETS = 61;

/**
 * KEYS: requests hash, tokens hash. ARGV: 'admit', requests per minute, tokens per minute, prompt tokens
 * -> {allowed, requests used, tokens used, request wait ms, token wait ms, request reset ms, token reset ms};
 * or ARGV: 'add', tokens -> {}.
 */
const SCRIPT = `
local WINDOW = ${BUCKETS}
local time = redis.call('TIME')
local now = tonumber(time[1])
local nowMs = now * 1000 + math.floor(tonumber(time[2]) / 1000)

local function count(key, amount)
  if amount > 0 then redis.call('HINCRBY', key, now, amount) end
  redis.call('EXPIRE', key, WINDOW + 1)
end

if ARGV[1] == 'add' then
  count(KEYS[2], tonumber(ARGV[2]))
  return {}
end

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
local requests, tokens = load(KEYS[1]), load(KEYS[2])
local requestWait, tokenWait = waitFor(requests, rpm, 1), waitFor(tokens, tpm, prompt)
local allowed = requestWait == 0 and tokenWait == 0
if allowed then
  count(KEYS[1], 1)
  count(KEYS[2], prompt)
  -- The current second is the newest bucket, so appending keeps the order.
  table.insert(requests.buckets, { now, 1 })
  requests.used = requests.used + 1
  table.insert(tokens.buckets, { now, prompt })
  tokens.used = tokens.used + prompt
end
return { allowed and 1 or 0, requests.used, tokens.used, requestWait, tokenWait,
  waitFor(requests, rpm, rpm), waitFor(tokens, tpm, tpm) }
`;

type RunScript = (requestsKey: string, tokensKey: string, ...args: Array<string | number>) => Promise<number[]>;

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

  constructor(options: RedisRateLimiterOptions) {
    const timeoutMs = options.commandTimeoutMs ?? 200;
    this.prefix = options.prefix ?? 'tg:';
    this.onError = options.onError ?? (() => {});
    ({ redis: this.redis, ready: this.started } = connectFailFast(options.url, timeoutMs, { enableAutoPipelining: true }));
    this.redis.defineCommand('tollgateRateLimit', { numberOfKeys: 2, lua: SCRIPT });
    const run = (this.redis as unknown as Record<'tollgateRateLimit', RunScript>).tollgateRateLimit.bind(this.redis);
    this.run = (...args) => (tracingEnabled() ? withSpan('redis tollgateRateLimit', { 'db.system': 'redis', 'db.operation.name': 'EVALSHA' }, () => run(...args), SpanKind.CLIENT) : run(...args));
  }

  async admit(accountId: string, limits: RateLimits, promptTokens: number): Promise<RateDecision> {
    try {
      await this.started;
      const [allowed, requestsUsed, tokensUsed, requestWait, tokenWait, requestReset, tokenReset] = (await this.run(
        ...this.keys(accountId),
        'admit',
        limits.requestsPerMinute,
        limits.tokensPerMinute,
        wholeTokens(promptTokens),
      )) as [number, number, number, number, number, number, number];
      return {
        allowed: allowed === 1,
        retryAfterSeconds: Math.max(1, Math.ceil(Math.max(requestWait, tokenWait) / 1000)),
        requests: window(limits.requestsPerMinute, requestsUsed, requestReset),
        tokens: window(limits.tokensPerMinute, tokensUsed, tokenReset),
      };
    } catch (error) {
      this.onError(error);
      return {
        allowed: true,
        retryAfterSeconds: 1,
        requests: window(limits.requestsPerMinute, 0, 0),
        tokens: window(limits.tokensPerMinute, 0, 0),
      };
    }
  }

  async addTokens(accountId: string, tokens: number): Promise<void> {
    try {
      await this.started;
      await this.run(...this.keys(accountId), 'add', wholeTokens(tokens));
    } catch (error) {
      this.onError(error);
    }
  }

  async close(): Promise<void> {
    if (this.redis.status === 'ready') await this.redis.quit().catch(() => this.redis.disconnect());
    else this.redis.disconnect();
  }

  private keys(accountId: string): [string, string] {
    // The hash tag puts both keys in one cluster slot, as a script's keys must be.
    const base = `${this.prefix}rl:{${accountId}}`;
    return [`${base}:req`, `${base}:tok`];
  }
}

function window(limit: number, used: number, resetMs: number): RateWindow {
  return { limit, remaining: Math.max(0, limit - used), resetMs };
}

/** HINCRBY takes integers only. */
function wholeTokens(tokens: number): number {
  return Number.isFinite(tokens) && tokens > 0 ? Math.ceil(tokens) : 0;
}
