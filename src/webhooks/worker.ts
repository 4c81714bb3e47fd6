/**
 * The delivery worker: claims due deliveries from the outbox (a lease per row, so replicas never send one
 * delivery at the same time), attempts each, and records the outcome: succeeded, pending again after the backoff
 * of spec 6.2, or dead. It polls every `poll_interval_ms` and is also woken by new rows and by its own retries.
 * The claim leaves out deliveries beyond the caps on attempts in flight per endpoint and per account, so a
 * receiver that never answers holds only its share of the slots; the rest go to other endpoints.
 */
import type { Logger } from 'pino';
import { newId, type ClaimCaps, type DeliveryRecord, type Storage, type WebhookRecord } from '../storage/index.js';
import { retryDelay } from './backoff.js';
import { attemptDelivery, type AttemptOutcome } from './deliver.js';

/**
 * A claim's lease, renewed every LEASE_RENEW_MS while its attempt runs (a receiver may take up to 30 s): the rows of
 * a worker that died are claimed again, and count against the in-flight caps, for at most this long.
 */
export const LEASE_MS = 10_000;

export interface WorkerOptions {
  storage: Storage;
  concurrency: number;
  /** Attempts in flight at once per webhook and per account, across all workers on the database. */
  caps?: ClaimCaps;
  pollIntervalMs: number;
  /** The lease of a claim (default LEASE_MS), renewed every third of it while the attempt runs. */
  leaseMs?: number;
  allowPrivate: boolean;
  logger: Logger;
  random?: () => number;
  /** False while no webhook is registered anywhere: then there is nothing to claim and no query is made. */
  active?: () => boolean;
  /** Told of every attempt once its outcome is recorded (metrics). */
  onAttempt?: (attempt: FinishedAttempt) => void;
}

export interface FinishedAttempt {
  row: DeliveryRecord;
  outcome: AttemptOutcome;
  /** The delivery's state after the attempt ('pending': a retry is scheduled). */
  status: 'succeeded' | 'pending' | 'dead';
  at: number;
}

export class DeliveryWorker {
  private readonly inFlight = new Set<Promise<void>>();
  /** Attempts in flight per webhook id, in this process. */
  readonly inFlightByWebhook = new Map<string, number>();
  /** Rows in flight per claim token: the leases to renew. */
  private readonly leases = new Map<string, number>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private pollTimer: NodeJS.Timeout | undefined;
  private renewTimer: NodeJS.Timeout | undefined;
  private polling = false;
  /** The last claim started: `stop` waits for it, so no row is claimed at shutdown and then left behind. */
  private claiming: Promise<void> | undefined;
  private again = false;
  private stopped = true;

  constructor(private readonly options: WorkerOptions) {}

  private get leaseMs(): number {
    return this.options.leaseMs ?? LEASE_MS;
  }

  start(): void {
    this.stopped = false;
    this.pollTimer = setInterval(() => this.wake(), this.options.pollIntervalMs);
    this.pollTimer.unref();
    this.renewTimer = setInterval(() => void this.renewLeases(), this.leaseMs / 3);
    this.renewTimer.unref();
    this.wake();
  }

  private async renewLeases(): Promise<void> {
    if (this.leases.size === 0) return;
    try {
      await this.options.storage.webhooks.renewLeases([...this.leases.keys()], Date.now() + this.leaseMs);
    } catch (error) {
      // The next renewal may succeed; a lease that runs out means one more attempt, never a lost delivery.
      this.options.logger.warn({ err: error }, 'webhook worker could not renew its leases');
    }
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
    clearInterval(this.renewTimer);
  }

  private wakeAt(time: number): void {
    const timer = setTimeout(
      () => {
        this.timers.delete(timer);
        this.wake();
      },
      Math.max(0, time - Date.now()),
    );
    timer.unref();
    this.timers.add(timer);
  }

  private async poll(): Promise<void> {
    this.again = false;
    try {
      const free = this.options.concurrency - this.inFlight.size;
      if (free <= 0) return;
      const token = newId('lease');
      const rows = await this.options.storage.webhooks.claim(Date.now(), free, this.leaseMs, token, this.options.caps);
      if (rows.length === 0) return;
      this.leases.set(token, rows.length);
      const webhooks = await this.options.storage.webhooks.getMany([...new Set(rows.map((row) => row.webhookId))]);
      const byId = new Map(webhooks.map((webhook) => [webhook.id, webhook]));
      for (const row of rows) {
        this.countInFlight(row.webhookId, 1);
        const attempt = this.deliver(row, byId.get(row.webhookId), token).finally(() => {
          this.inFlight.delete(attempt);
          this.countInFlight(row.webhookId, -1);
          this.releaseLease(token);
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

  private releaseLease(token: string): void {
    const left = (this.leases.get(token) ?? 1) - 1;
    if (left > 0) this.leases.set(token, left);
    else this.leases.delete(token);
  }

  private countInFlight(webhookId: string, change: number): void {
    const n = (this.inFlightByWebhook.get(webhookId) ?? 0) + change;
    if (n > 0) this.inFlightByWebhook.set(webhookId, n);
    else this.inFlightByWebhook.delete(webhookId);
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
    let status: FinishedAttempt['status'] = 'succeeded';
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
    const fields = {
      delivery_id: row.id,
      webhook_id: row.webhookId,
      event_type: row.eventType,
      attempt: attempts,
      http_status: outcome.status,
      duration_ms: outcome.durationMs,
    };
    try {
      const kept = await storage.webhooks.finishAttempt(row.id, token, {
        status,
        attempts,
        nextAttemptAt,
        lastStatus: outcome.status,
        lastError,
        at,
      });
      if (!kept) logger.warn(fields, 'webhook delivery claim expired before its outcome was recorded');
    } catch (error) {
      // The lease runs out and another attempt follows: at-least-once, never lost.
      logger.error({ ...fields, err: error }, 'webhook delivery outcome could not be recorded');
      return;
    }
    this.options.onAttempt?.({ row, outcome, status, at });
    if (status === 'pending') this.wakeAt(nextAttemptAt);
    if (status === 'dead') logger.warn({ ...fields, error: lastError }, 'webhook delivery moved to the dead letters');
    else logger.debug({ ...fields, status }, 'webhook delivery attempt');
  }
}
