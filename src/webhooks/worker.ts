/**
 * The delivery worker: claims due deliveries from the outbox (a lease per row, so replicas never send one
 * delivery at the same time), attempts each, and records the outcome: succeeded, pending again after the backoff
 * of spec 6.2, or dead. It polls every `poll_interval_ms` and is also woken by new rows and by its own retries.
 */
import type { Logger } from 'pino';
import { newId, type DeliveryRecord, type Storage, type WebhookRecord } from '../storage/index.js';
import { retryDelay } from './backoff.js';
import { attemptDelivery, type AttemptOutcome } from './deliver.js';

/** A claim outlives the longest attempt (timeout at most 30 s) with room to record the outcome. */
export const LEASE_MS = 45_000;

export interface WorkerOptions {
  storage: Storage;
  concurrency: number;
  pollIntervalMs: number;
  allowPrivate: boolean;
  logger: Logger;
  random?: () => number;
  /** False while no webhook is registered anywhere: then there is nothing to claim and no query is made. */
  active?: () => boolean;
}

export class DeliveryWorker {
  private readonly inFlight = new Set<Promise<void>>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private pollTimer: NodeJS.Timeout | undefined;
  private polling = false;
  /** The last claim started: `stop` waits for it, so no row is claimed at shutdown and then left behind. */
  private claiming: Promise<void> | undefined;
  private again = false;
  private stopped = true;

  constructor(private readonly options: WorkerOptions) {}

  start(): void {
    this.stopped = false;
    this.pollTimer = setInterval(() => this.wake(), this.options.pollIntervalMs);
    this.pollTimer.unref();
    this.wake();
  }

  /** Look for due deliveries now. */
  wake(): void {
    if (this.stopped || this.options.active?.() === false) return;
    if (this.polling) {
      this.again = true;
      return;
    }
    this.polling = true;
    this.claiming = this.poll();
  }

  /** Stops claiming and waits for a claim under way and the attempts in flight (each ends within its timeout). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.pollTimer);
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    await this.claiming;
    await Promise.allSettled([...this.inFlight]);
  }

  private wakeAt(time: number): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.wake();
    }, Math.max(0, time - Date.now()));
    timer.unref();
    this.timers.add(timer);
  }

  private async poll(): Promise<void> {
    this.again = false;
    try {
      const free = this.options.concurrency - this.inFlight.size;
      if (free <= 0) return;
      const token = newId('lease');
      const rows = await this.options.storage.webhooks.claim(Date.now(), free, LEASE_MS, token);
      if (rows.length === 0) return;
      const webhooks = await this.options.storage.webhooks.getMany([...new Set(rows.map((row) => row.webhookId))]);
      const byId = new Map(webhooks.map((webhook) => [webhook.id, webhook]));
      for (const row of rows) {
        const attempt = this.deliver(row, byId.get(row.webhookId), token).finally(() => {
          this.inFlight.delete(attempt);
          this.wake();
        });
        this.inFlight.add(attempt);
      }
    } catch (error) {
      this.options.logger.warn({ err: error }, 'webhook worker could not claim deliveries; retrying');
    } finally {
      this.polling = false;
      if (this.again) setImmediate(() => this.wake());
    }
  }

  private async deliver(row: DeliveryRecord, webhook: WebhookRecord | undefined, token: string): Promise<void> {
    const { storage, logger } = this.options;
    let outcome: AttemptOutcome;
    if (!webhook) {
      outcome = { ok: false, retryable: false, status: null, error: 'the webhook was deleted', durationMs: 0 };
    } else {
      outcome = await attemptDelivery(
        { url: webhook.url, secret: webhook.secret, headers: webhook.headers, timeoutMs: webhook.timeoutMs },
        row.payload,
        { eventId: row.eventId, eventType: row.eventType },
        this.options.allowPrivate,
      );
    }
    const attempts = row.attempts + 1;
    const maxAttempts = webhook?.retry.maxAttempts ?? 1;
    const at = Date.now();
    let status: DeliveryRecord['status'] = 'succeeded';
    let nextAttemptAt = at;
    let lastError = outcome.error;
    if (!outcome.ok) {
      if (outcome.retryable && attempts < maxAttempts) {
        status = 'pending';
        nextAttemptAt = at + retryDelay(webhook!.retry, attempts, this.options.random);
      } else {
        status = 'dead';
        if (outcome.retryable) lastError = `${outcome.error}; all ${maxAttempts} attempts failed`;
      }
    }
    const fields = { delivery_id: row.id, webhook_id: row.webhookId, event_type: row.eventType, attempt: attempts, http_status: outcome.status, duration_ms: outcome.durationMs };
    try {
      const kept = await storage.webhooks.finishAttempt(row.id, token, { status, attempts, nextAttemptAt, lastStatus: outcome.status, lastError, at });
      if (!kept) logger.warn(fields, 'webhook delivery claim expired before its outcome was recorded');
    } catch (error) {
      // The lease runs out and another attempt follows: at-least-once, never lost.
      logger.error({ ...fields, err: error }, 'webhook delivery outcome could not be recorded');
      return;
    }
    if (status === 'pending') this.wakeAt(nextAttemptAt);
    if (status === 'dead') logger.warn({ ...fields, error: lastError }, 'webhook delivery moved to the dead letters');
    else logger.debug({ ...fields, status }, 'webhook delivery attempt');
  }
}
