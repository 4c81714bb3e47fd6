import type { CompletionAsk, RateDecision, RateLimiter, RateLimits, RateWindow } from './types.js';

/**
 * A sliding window of 61 one-second buckets: counting 61 buckets covers more than any 60-second span, so no
 * 60-second span ever admits more than the limit (at the price of being up to one second strict).
 */
const BUCKETS = 61;

class Window {
  private readonly counts = new Float64Array(BUCKETS);
  private readonly seconds = new Float64Array(BUCKETS).fill(-1);

  used(nowSecond: number): number {
    let total = 0;
    for (let i = 0; i < BUCKETS; i++) if (this.seconds[i]! > nowSecond - BUCKETS) total += this.counts[i]!;
    return total;
  }

  add(nowSecond: number, amount: number): void {
    const slot = nowSecond % BUCKETS;
    if (this.seconds[slot] !== nowSecond) {
      this.seconds[slot] = nowSecond;
      this.counts[slot] = 0;
    }
    this.counts[slot]! += amount;
  }

  /** Takes up to `amount` out of the bucket of `second`, if it is still kept. */
  remove(second: number, amount: number): void {
    const slot = second % BUCKETS;
    if (this.seconds[slot] === second) this.counts[slot] = Math.max(0, this.counts[slot]! - amount);
  }

  /** Milliseconds until everything counted now has left the window (OpenAI's "reset"): no sort needed. */
  emptyInMs(nowMs: number): number {
    const nowSecond = Math.floor(nowMs / 1000);
    let newest = -1;
    for (let i = 0; i < BUCKETS; i++) {
      if (this.seconds[i]! > nowSecond - BUCKETS && this.counts[i]! > 0 && this.seconds[i]! > newest)
        newest = this.seconds[i]!;
    }
    return newest < 0 ? 0 : (newest + BUCKETS) * 1000 - nowMs;
  }

  /** Milliseconds until `needed` more fits under `limit`. */
  waitFor(nowMs: number, limit: number, needed: number): number {
    const nowSecond = Math.floor(nowMs / 1000);
    let excess = this.used(nowSecond) + needed - limit;
    if (excess <= 0) return 0;
    const live: Array<[number, number]> = [];
    for (let i = 0; i < BUCKETS; i++) {
      if (this.seconds[i]! > nowSecond - BUCKETS && this.counts[i]! > 0) live.push([this.seconds[i]!, this.counts[i]!]);
    }
    live.sort((a, b) => a[0] - b[0]);
    for (const [second, count] of live) {
      excess -= count;
      if (excess <= 0) return (second + BUCKETS) * 1000 - nowMs;
    }
    return BUCKETS * 1000;
  }
}

interface AccountWindows {
  requests: Window;
  tokens: Window;
  lastSecond: number;
}

export class MemoryRateLimiter implements RateLimiter {
  private readonly accounts = new Map<string, AccountWindows>();

  /** Whether one request (and one token) would pass now; counts nothing. */
  peek(accountId: string, limits: RateLimits): RateDecision {
    return this.decide(accountId, limits, 1, undefined, false);
  }

  admit(accountId: string, limits: RateLimits, promptTokens: number, completion?: CompletionAsk): RateDecision {
    return this.decide(accountId, limits, promptTokens, completion, true);
  }

  /** The decision on a request of `promptTokens` and `completion`; counted in the windows when `count` and allowed. */
  private decide(
    accountId: string,
    limits: RateLimits,
    promptTokens: number,
    completion: CompletionAsk | undefined,
    count: boolean,
  ): RateDecision {
    const nowMs = Date.now();
    const nowSecond = Math.floor(nowMs / 1000);
    const windows = this.windows(accountId, nowSecond);
    const choices = completion && completion.bound > 0 ? completion.choices : 0;
    const requestWait = windows.requests.waitFor(nowMs, limits.requestsPerMinute, 1);
    // At least the prompt and one token per choice must fit; the completion bound is what room is left.
    const tokenWait = windows.tokens.waitFor(nowMs, limits.tokensPerMinute, promptTokens + choices);
    const allowed = requestWait === 0 && tokenWait === 0;
    let completionBound = 0;
    if (allowed && choices > 0) {
      const free = limits.tokensPerMinute - windows.tokens.used(nowSecond) - promptTokens;
      completionBound = Math.min(completion!.bound, Math.floor(free / choices));
    }
    if (allowed && count) {
      windows.requests.add(nowSecond, 1);
      windows.tokens.add(nowSecond, promptTokens + completionBound * choices);
    }
    return {
      allowed,
      retryAfterSeconds: Math.max(1, Math.ceil(Math.max(requestWait, tokenWait) / 1000)),
      requests: this.describe(windows.requests, nowMs, limits.requestsPerMinute),
      tokens: this.describe(windows.tokens, nowMs, limits.tokensPerMinute),
      completionBound,
      ...(count ? { second: nowSecond } : {}),
    };
  }

  giveBack(accountId: string, second: number, tokens: number, requests = 0): void {
    const windows = this.accounts.get(accountId);
    if (tokens > 0) windows?.tokens.remove(second, tokens);
    if (requests > 0) windows?.requests.remove(second, requests);
  }

  private windows(accountId: string, nowSecond: number): AccountWindows {
    let windows = this.accounts.get(accountId);
    if (!windows) {
      windows = { requests: new Window(), tokens: new Window(), lastSecond: nowSecond };
      this.accounts.set(accountId, windows);
      if (this.accounts.size % 1024 === 0) this.evictIdle(nowSecond);
    }
    windows.lastSecond = nowSecond;
    return windows;
  }

  private evictIdle(nowSecond: number): void {
    for (const [id, windows] of this.accounts) if (nowSecond - windows.lastSecond > BUCKETS) this.accounts.delete(id);
  }

  private describe(window: Window, nowMs: number, limit: number): RateWindow {
    const used = window.used(Math.floor(nowMs / 1000));
    return { limit, remaining: Math.max(0, limit - used), resetMs: window.emptyInMs(nowMs) };
  }
}
