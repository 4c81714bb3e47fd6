/**
 * Shared pieces of the client compatibility suite: a gateway per file, credit look-ups, rate-limited accounts,
 * a request-recording `fetch`, and a rate limiter whose clock the test moves so that a real 429 carries a short
 * `Retry-After` (the real window is 60 s; no test waits that long).
 */
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import {
  MemoryRateLimiter,
  type CompletionAsk,
  type RateDecision,
  type RateLimiter,
  type RateLimits,
} from '../../src/limits/index.js';
import { startGateway, type TestGateway } from '../support/gateway.js';

export const MODEL = 'sandbox/echo';
/** A well-formed live key that no account has: refused with 401. */
export const UNKNOWN_KEY = 'tg-live-abcdefghijklmnopqrstuvwxyzABCDEF';

/** The gateway's own in-memory limiter, reading a clock the test controls (the real clock unless told). */
export class ClockedLimiter implements RateLimiter {
  private readonly inner = new MemoryRateLimiter();
  private clock: () => number = () => Date.now();

  admit(accountId: string, limits: RateLimits, promptTokens: number, completion?: CompletionAsk): RateDecision {
    return this.at(() => this.inner.admit(accountId, limits, promptTokens, completion));
  }

  peek(accountId: string, limits: RateLimits): RateDecision {
    return this.at(() => this.inner.peek(accountId, limits));
  }

  giveBack(accountId: string, second: number, tokens: number): void {
    this.inner.giveBack(accountId, second, tokens);
  }

  /** Stops the limiter's clock at `ms`. */
  freeze(ms: number): void {
    this.clock = () => ms;
  }

  /** Lets the limiter's clock run on, at real speed, from where it stands. */
  resume(): void {
    const from = this.clock();
    const realStart = Date.now();
    this.clock = () => from + (Date.now() - realStart);
  }

  /** Back to the real clock. */
  reset(): void {
    this.clock = () => Date.now();
  }

  /** Runs the (synchronous) memory limiter with Date.now reading the test clock. */
  private at<T>(run: () => T): T {
    const realNow = Date.now;
    const now = this.clock();
    Date.now = () => now;
    try {
      return run();
    } finally {
      Date.now = realNow;
    }
  }
}

export interface ClientGateway extends TestGateway {
  limiter: ClockedLimiter;
}

export async function startClientGateway(): Promise<ClientGateway> {
  const limiter = new ClockedLimiter();
  const gateway = await startGateway({ limiter });
  return Object.assign(gateway, { limiter });
}

/** The test file's gateway and account, set by `clientGatewayPerFile` before the file's first test. */
export let gateway: ClientGateway;
export let account: { id: string; key: string };

/**
 * A gateway and an account for the whole test file (`gateway` and `account` above, also handed to `use`), closed
 * after the file; the limiter's clock goes back to real time after each test.
 */
export function clientGatewayPerFile(
  use?: (gateway: ClientGateway, account: { id: string; key: string }) => void,
): void {
  beforeAll(async () => {
    gateway = await startClientGateway();
    account = await gateway.account();
    use?.(gateway, account);
  });
  afterAll(async () => gateway?.close());
  afterEach(() => gateway?.limiter.reset());
}

export async function credits(gateway: TestGateway, key: string): Promise<number> {
  const response = await fetch(`${gateway.baseURL}/credits`, { headers: { authorization: `Bearer ${key}` } });
  if (response.status !== 200) throw new Error(`GET /v1/credits: ${response.status}`);
  return ((await response.json()) as { balance: { credits: number } }).balance.credits;
}

/** USD amounts compared exactly, as integer nano-USD. */
export const nano = (usd: number): number => Math.round(usd * 1e9);

/** A plain chat request, outside any client library (to use up a rate limit). */
export async function chat(gateway: TestGateway, key: string, content = 'warm-up'): Promise<Response> {
  const response = await fetch(`${gateway.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, messages: [{ role: 'user', content }] }),
  });
  await response.arrayBuffer();
  return response;
}

/** A new account limited to one request per minute. */
export async function oneRpmAccount(gateway: TestGateway): Promise<{ id: string; key: string }> {
  const account = await gateway.account();
  const patched = await gateway.admin('PATCH', `/admin/accounts/${account.id}`, { requests_per_minute: 1 });
  if (patched.status !== 200) throw new Error(`PATCH failed: ${patched.status} ${JSON.stringify(patched.body)}`);
  return account;
}

/** A key whose next chat request gets a 429 (its one request per minute is used up). */
export async function rateLimitedKey(gateway: TestGateway): Promise<string> {
  const { key } = await oneRpmAccount(gateway);
  const first = await chat(gateway, key);
  if (first.status !== 200) throw new Error(`warm-up request: ${first.status}`);
  return key;
}

/** A key whose next chat request gets a 429 daily_limit_exceeded (its account's daily limit is 0). */
export async function dailyLimitedKey(gateway: TestGateway): Promise<string> {
  const { id, key } = await gateway.account();
  expect((await gateway.admin('PATCH', `/admin/accounts/${id}`, { daily_limit: 0 })).status).toBe(200);
  return key;
}

/** A key whose next request gets a 402 (balance 0). */
export async function brokeKey(gateway: TestGateway): Promise<string> {
  const { id, key } = await gateway.account();
  await gateway.setBalance(id, 0);
  return key;
}

export interface Seen {
  status: number;
  retryAfter: string | null;
  /** performance.now() when the response headers arrived. */
  at: number;
}

/** A fetch that records every response a client library receives, for counting requests and retries. */
export function recordingFetch(onResponse?: (response: Response) => void): { fetch: typeof fetch; seen: Seen[] } {
  const seen: Seen[] = [];
  const recording = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const response = await fetch(input, init);
    seen.push({ status: response.status, retryAfter: response.headers.get('retry-after'), at: performance.now() });
    onResponse?.(response);
    return response;
  };
  return { fetch: recording, seen };
}

/**
 * A key whose next chat request is refused with `429` and `Retry-After: 2`, and whose retry passes once those
 * 2 seconds have gone by. How: an account with 1 request/minute makes its one request with the limiter's clock
 * stopped at a whole second T; the clock is then stopped at T + 59.9 s, where the window frees in 1.1 s (so
 * `Retry-After: 2`); when the client receives that 429 (`onResponse`), the clock runs on at real speed, and a
 * retry at least 2 s later falls in a fresh window. A retry sooner than 1.1 s would be refused again.
 */
export async function retryAfterKey(
  gateway: ClientGateway,
): Promise<{ key: string; onResponse: (response: Response) => void }> {
  const { key } = await oneRpmAccount(gateway);
  const t = Math.ceil(Date.now() / 1000) * 1000;
  gateway.limiter.freeze(t);
  const first = await chat(gateway, key);
  if (first.status !== 200) throw new Error(`warm-up request: ${first.status}`);
  gateway.limiter.freeze(t + 59_900);
  let resumed = false;
  return {
    key,
    onResponse: (response) => {
      if (response.status === 429 && !resumed) {
        resumed = true;
        gateway.limiter.resume();
      }
    },
  };
}

/**
 * What `recordingFetch` saw of a client retrying a `retryAfterKey` request: the 429 with `Retry-After: 2`, then,
 * the 2 s it was told later (a retry before 1.1 s would have been refused again), the answer.
 */
export function expectRetriedAfterTwoSeconds(seen: Seen[]): void {
  expect(seen.map((s) => [s.status, s.retryAfter])).toEqual([
    [429, '2'],
    [200, null],
  ]);
  expect(seen[1]!.at - seen[0]!.at).toBeGreaterThanOrEqual(1_950);
}
