/**
 * Requests and tokens per minute per account. The in-memory limiter serves one process; the Redis limiter
 * (scale-out) implements the same interface.
 */
export { MemoryRateLimiter } from './memory.js';
export { RedisRateLimiter, type RedisRateLimiterOptions } from './redis.js';
export type { CompletionAsk, RateDecision, RateLimiter, RateLimits, RateWindow } from './types.js';
