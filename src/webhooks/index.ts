/**
 * Webhooks' public face: the EventSink behind which events become durable deliveries, the worker that sends
 * them, and the service the `/v1/webhooks` routes use. The receiver library is `./receiver/` (`tollgate/webhooks`).
 */
import type { Logger } from 'pino';
import type { EventSink } from '../events/index.js';
import type { Storage } from '../storage/index.js';
import { SubscriptionIndex, WebhookOutbox } from './outbox.js';
import { WebhookService } from './service.js';
import type { WebhooksSettings } from './types.js';
import { DeliveryWorker, type FinishedAttempt } from './worker.js';

export { WebhookService, parsePage, type Page, type PageParams } from './service.js';
export {
  CreateWebhookSchema,
  PatchWebhookSchema,
  type CreateWebhookBody,
  type PatchWebhookBody,
} from './validation.js';
export { isPublicAddress, resolveTarget, BlockedAddressError } from './ssrf.js';
export { retryDelay, JITTER } from './backoff.js';
export { DEFAULT_RETRY, DEFAULT_TIMEOUT_MS, EVENT_TYPES, WILDCARDS, type WebhooksSettings } from './types.js';
export { DeliveryWorker, LEASE_MS, type FinishedAttempt } from './worker.js';

export interface WebhooksOptions {
  storage: Storage;
  settings: WebhooksSettings;
  logger: Logger;
  onAttempt?: (attempt: FinishedAttempt) => void;
}

export class Webhooks {
  readonly sink: EventSink;
  readonly service: WebhookService;
  readonly worker: DeliveryWorker;
  private readonly index = new SubscriptionIndex();
  private readonly outbox: WebhookOutbox;
  private refreshTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: WebhooksOptions) {
    const { storage, settings, logger } = options;
    this.worker = new DeliveryWorker({
      storage,
      concurrency: settings.concurrency,
      caps: { perEndpoint: settings.max_in_flight_per_endpoint, perAccount: settings.max_in_flight_per_account },
      pollIntervalMs: settings.poll_interval_ms,
      allowPrivate: settings.allow_private_urls,
      logger,
      active: () => this.index.size > 0,
      onAttempt: options.onAttempt,
    });
    this.outbox = new WebhookOutbox({
      storage,
      index: this.index,
      maxBuffered: settings.max_buffered,
      onWritten: () => this.worker.wake(),
      onError: (error, dropped) =>
        dropped > 0
          ? logger.error({ dropped }, 'webhook outbox buffer full: oldest events dropped')
          : logger.warn({ err: error }, 'webhook outbox write failed; retrying'),
    });
    this.sink = this.outbox;
    this.service = new WebhookService({
      storage,
      allowPrivate: settings.allow_private_urls,
      onChange: () => this.refresh(),
      onDue: () => this.worker.wake(),
    });
  }

  /** Loads the registrations, then keeps them fresh (changes made through other replicas) and starts the worker. */
  async start(): Promise<void> {
    await this.refresh();
    this.refreshTimer = setInterval(() => {
      this.refresh().catch((error) =>
        this.options.logger.warn({ err: error }, 'webhook registrations could not be reloaded'),
      );
    }, this.options.settings.refresh_ms);
    this.refreshTimer.unref();
    this.worker.start();
  }

  /** Deliveries due and not claimed; no query while no webhook is registered. */
  async queueDepth(): Promise<number> {
    return this.index.size > 0 ? this.options.storage.webhooks.countDue(Date.now()) : 0;
  }

  async refresh(): Promise<void> {
    this.index.replace(await this.options.storage.webhooks.listAll());
  }

  /** Writes buffered events, then lets attempts in flight finish. */
  async stop(): Promise<void> {
    clearInterval(this.refreshTimer);
    await this.outbox.close();
    await this.worker.stop();
  }
}
