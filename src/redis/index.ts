/** Redis connections shared by the modules that use Redis (rate limits, change bus, credit state). */
import { Redis, type RedisOptions } from 'ioredis';

export interface FailFastConnection {
  redis: Redis;
  /** Resolves at the first connection, or after `timeoutMs`: early requests wait briefly, never long. */
  ready: Promise<void>;
}

/**
 * A connection whose commands fail within `timeoutMs` while Redis is unreachable (no offline queue), for
 * callers that have a fallback: fail open, or retry later. Errors surface through the failing commands;
 * without a listener ioredis would log each reconnection attempt.
 */
export function connectFailFast(url: string, timeoutMs: number, options: RedisOptions = {}): FailFastConnection {
  const redis = new Redis(url, {
    commandTimeout: timeoutMs,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
    ...options,
  });
  redis.on('error', () => undefined);
  const ready = new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    timer.unref();
    redis.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  return { redis, ready };
}
