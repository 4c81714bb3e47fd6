export interface RateLimits {
  requestsPerMinute: number;
  tokensPerMinute: number;
}

export interface RateWindow {
  limit: number;
  remaining: number;
  /** Milliseconds until the window frees capacity. */
  resetMs: number;
}

export interface RateDecision {
  allowed: boolean;
  /** Whole seconds (>= 1) until a retry can pass; meaningful when refused. */
  retryAfterSeconds: number;
  requests: RateWindow;
  tokens: RateWindow;
}

export interface RateLimiter {
  /** Counts one request and `promptTokens` when it fits both limits; counts nothing when refused. */
  admit(accountId: string, limits: RateLimits, promptTokens: number): RateDecision | Promise<RateDecision>;
  /**
   * Whether a request of one token would be admitted now, counting nothing: the cheap refusal before costly work
   * (tokenizing a large body). The later `admit` decides; a replica's lease may make this answer stricter.
   */
  peek(accountId: string, limits: RateLimits): RateDecision | Promise<RateDecision>;
  /** Adds tokens known only after the answer (completion tokens). */
  addTokens(accountId: string, tokens: number): void | Promise<void>;
  /** Releases connections, if any. */
  close?(): Promise<void>;
}
