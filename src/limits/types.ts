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

/** The completion a request may generate: `choices` answers of up to `bound` tokens each. */
export interface CompletionAsk {
  bound: number;
  choices: number;
}

export interface RateDecision {
  allowed: boolean;
  /** Whole seconds (>= 1) until a retry can pass; meaningful when refused. */
  retryAfterSeconds: number;
  requests: RateWindow;
  tokens: RateWindow;
  /** The completion bound per choice counted in the token window: the one asked, or lower when it had less room. */
  completionBound: number;
  /** The window's second whose bucket counted the tokens (what `giveBack` names); absent when nothing can be given back. */
  second?: number;
}

export interface RateLimiter {
  /**
   * Counts one request, `promptTokens` and, when asked, the completion (bound x choices) when they fit both
   * limits. A completion that does not fit whole is counted at the bound per choice that fits; refused (nothing
   * counted) only when not even the prompt and one token per choice fit.
   */
  admit(
    accountId: string,
    limits: RateLimits,
    promptTokens: number,
    completion?: CompletionAsk,
  ): RateDecision | Promise<RateDecision>;
  /**
   * Whether a request of one token would be admitted now, counting nothing: the cheap refusal before costly work
   * (tokenizing a large body). The later `admit` decides; a replica's lease may make this answer stricter.
   */
  peek(accountId: string, limits: RateLimits): RateDecision | Promise<RateDecision>;
  /**
   * Takes `tokens` (and `requests`: a request another window refused) back out of the bucket of `second`, when that
   * bucket is still in the window: what an answer did not use.
   */
  giveBack(accountId: string, second: number, tokens: number, requests?: number): void | Promise<void>;
  /** Releases connections, if any. */
  close?(): Promise<void>;
}
