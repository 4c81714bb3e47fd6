/**
 * Change notifications between replicas over Redis pub/sub: one connection publishes, one subscribes to
 * `${prefix}changes`. Messages are JSON `{ origin, accountId?, keyId? }`; a replica skips its own (it ran its
 * handlers when it published).
 *
 * Pub/sub is fire-and-forget: a replica disconnected from Redis misses what was published meanwhile. ioredis
 * reconnects and resubscribes by itself, and the caches' 1 s TTL/refresh bounds how stale a missed change
 * can leave a replica. Publishing never throws; failures (and subscriber connection errors) go to `onError`.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { connectFailFast } from '../redis/index.js';
import { dispatch, type Change, type ChangeBus, type ChangeHandler } from './bus.js';

export interface RedisChangeBusOptions {
  url: string;
  /** Prepended to the channel name; default 'tg:'. */
  prefix?: string;
  onError?: (error: unknown) => void;
  commandTimeoutMs?: number;
}

export class RedisChangeBus implements ChangeBus {
  readonly channel: string;
  private readonly origin = randomUUID();
  private readonly handlers: ChangeHandler[] = [];
  private readonly publisher: Redis;
  private readonly subscriber: Redis;
  private readonly onError: (error: unknown) => void;
  /** Settles on the publisher's first connection or after one command timeout, so a publish right at start-up is not lost. */
  private readonly started: Promise<void>;
  private closed = false;

  constructor(options: RedisChangeBusOptions) {
    this.channel = `${options.prefix ?? 'tg:'}changes`;
    this.onError = options.onError ?? (() => {});
    // Fails fast while disconnected: a change must not wait in a queue while the admin call waits for it.
    const timeoutMs = options.commandTimeoutMs ?? 500;
    ({ redis: this.publisher, ready: this.started } = connectFailFast(options.url, timeoutMs));
    // Queues SUBSCRIBE until the first connection however long Redis takes to come up.
    this.subscriber = new Redis(options.url, { maxRetriesPerRequest: null });
    this.subscriber.on('error', (error) => this.report(error));
    this.subscriber.on('message', (channel: string, message: string) => {
      const change = channel === this.channel ? this.parse(message) : undefined;
      if (change) void dispatch(this.handlers, change, this.onError);
    });
    this.subscriber.subscribe(this.channel).catch((error: unknown) => this.report(error));
  }

  async publish(change: Change): Promise<void> {
    await dispatch(this.handlers, change, this.onError);
    try {
      await this.started;
      await this.publisher.publish(this.channel, JSON.stringify({ origin: this.origin, ...change }));
    } catch (error) {
      this.report(error);
    }
  }

  subscribe(handler: ChangeHandler): void {
    this.handlers.push(handler);
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(
      [this.publisher, this.subscriber].map(async (redis) => {
        if (redis.status !== 'ready') return redis.disconnect();
        await redis.quit().catch(() => redis.disconnect());
      }),
    );
  }

  private parse(message: string): Change | undefined {
    let value: unknown;
    try {
      value = JSON.parse(message);
    } catch {
      return undefined;
    }
    if (typeof value !== 'object' || value === null) return undefined;
    const { origin, accountId, keyId }: { origin?: unknown; accountId?: unknown; keyId?: unknown } = value;
    if (origin === this.origin) return undefined;
    return {
      ...(typeof accountId === 'string' ? { accountId } : {}),
      ...(typeof keyId === 'string' ? { keyId } : {}),
    };
  }

  private report(error: unknown): void {
    if (!this.closed) this.onError(error);
  }
}
