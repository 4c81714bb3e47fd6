import type { RateDecision } from '../limits/index.js';

/** OpenAI's rate-limit headers (resets in OpenAI's notation: "1s", "6m0s", "250ms"), and the provider that answers. */
export function rateLimitHeaders(decision: RateDecision, provider?: string): Record<string, string> {
  const headers: Record<string, string> = {
    'x-ratelimit-limit-requests': String(decision.requests.limit),
    'x-ratelimit-remaining-requests': String(decision.requests.remaining),
    'x-ratelimit-reset-requests': duration(decision.requests.resetMs),
    'x-ratelimit-limit-tokens': String(decision.tokens.limit),
    'x-ratelimit-remaining-tokens': String(decision.tokens.remaining),
    'x-ratelimit-reset-tokens': duration(decision.tokens.resetMs),
  };
  if (provider !== undefined) headers['x-tollgate-provider'] = provider;
  return headers;
}

export function duration(ms: number): string {
  if (ms <= 0) return '0s';
  if (ms < 1000) return `${Math.ceil(ms)}ms`;
  const seconds = Math.ceil(ms / 1000);
  const minutes = Math.floor(seconds / 60);
  return minutes > 0 ? `${minutes}m${seconds % 60}s` : `${seconds}s`;
}
