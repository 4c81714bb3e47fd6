/** Prometheus metrics (prom-client), one registry per app so tests and replicas do not share counters. */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export class Metrics {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'tollgate_requests_total',
    help: 'HTTP requests by route and status',
    labelNames: ['route', 'status'],
    registers: [this.registry],
    collect: () => this.handOver(),
  });
  readonly requestDuration = new Histogram({
    name: 'tollgate_request_duration_seconds',
    help: 'Time from request to the last byte of the response',
    labelNames: ['route'],
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });
  readonly upstreamDuration = new Histogram({
    name: 'tollgate_upstream_duration_seconds',
    help: 'Upstream calls by provider and outcome',
    labelNames: ['provider', 'outcome'],
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
    registers: [this.registry],
  });
  readonly tokens = new Counter({
    name: 'tollgate_tokens_total',
    help: 'Tokens metered by model and kind (prompt, completion)',
    labelNames: ['model', 'kind'],
    registers: [this.registry],
    collect: () => this.handOver(),
  });
  readonly creditsDebited = new Counter({
    name: 'tollgate_credits_debited_usd_total',
    help: 'USD debited from balances (display only; the ledger holds the exact figures)',
    labelNames: ['model'],
    registers: [this.registry],
    collect: () => this.handOver(),
  });
  readonly rateLimited = new Counter({
    name: 'tollgate_rate_limit_rejections_total',
    help: 'Requests refused by a rate or daily limit',
    labelNames: ['code'],
    registers: [this.registry],
  });
  readonly reservationsOpen = new Gauge({
    name: 'tollgate_reservations_open',
    help: 'Credit reservations held by requests in flight',
    registers: [this.registry],
    collect: () => {
      if (this.openReservations) this.reservationsOpen.set(this.openReservations());
    },
  });
  /** Read when the metrics are read: the count is the wallet's own, never a copy a request left behind. */
  private openReservations: (() => number) | undefined;
  readonly usageCapped = new Counter({
    name: 'tollgate_usage_capped_total',
    help: 'Settlements whose upstream reported more tokens than the request allowed (billed at the allowance)',
    labelNames: ['model'],
    registers: [this.registry],
  });
  readonly storageErrors = new Counter({
    name: 'tollgate_storage_errors_total',
    help: 'Failed database writes (retried)',
    registers: [this.registry],
  });
  readonly redisErrors = new Counter({
    name: 'tollgate_redis_errors_total',
    help: 'Redis commands that failed (rate limits fail open; change notifications and credit holds are retried)',
    registers: [this.registry],
  });

  readonly webhookQueueDepth = new Gauge({
    name: 'tollgate_webhook_queue_depth',
    help: 'Webhook deliveries due and not claimed by any worker (all processes on the database)',
    registers: [this.registry],
    collect: async () => {
      // A failed count keeps the last value rather than failing the scrape.
      const depth = await this.webhookSource?.queueDepth().catch(() => undefined);
      if (depth !== undefined) this.webhookQueueDepth.set(depth);
    },
  });
  readonly webhookInFlight = new Gauge({
    name: 'tollgate_webhook_in_flight',
    help: 'Webhook delivery attempts in flight in this process, by webhook id (only endpoints with one or more)',
    labelNames: ['endpoint'],
    registers: [this.registry],
    collect: () => {
      if (!this.webhookSource) return;
      this.webhookInFlight.reset();
      for (const [endpoint, n] of this.webhookSource.inFlight()) this.webhookInFlight.set({ endpoint }, n);
    },
  });
  readonly webhookDelivery = new Histogram({
    name: 'tollgate_webhook_delivery_seconds',
    help: "From a delivery's entry in the outbox to the receiver's 2xx, over all its attempts",
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800],
    registers: [this.registry],
  });
  readonly webhookAttempt = new Histogram({
    name: 'tollgate_webhook_attempt_seconds',
    help: 'One webhook delivery attempt, by outcome (succeeded, retry, dead)',
    labelNames: ['outcome'],
    buckets: [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });
  private webhookSource: { queueDepth(): Promise<number>; inFlight(): ReadonlyMap<string, number> } | undefined;

  constructor(options: { defaultMetrics?: boolean } = {}) {
    if (options.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  /** Where `tollgate_reservations_open` comes from (the wallet, built after the metrics). */
  countReservations(source: () => number): void {
    this.openReservations = source;
  }

  /** Where the webhook gauges come from (the webhooks module, built after the metrics). */
  observeWebhooks(source: { queueDepth(): Promise<number>; inFlight(): ReadonlyMap<string, number> }): void {
    this.webhookSource = source;
  }

  /** One recorded attempt; `status` is the delivery's state after it ('pending': a retry is scheduled). */
  recordWebhookAttempt(
    status: 'succeeded' | 'pending' | 'dead',
    attemptSeconds: number,
    sinceQueuedSeconds: number,
  ): void {
    this.webhookAttempt.observe({ outcome: status === 'pending' ? 'retry' : status }, attemptSeconds);
    if (status === 'succeeded') this.webhookDelivery.observe(sinceQueuedSeconds);
  }

  private readonly counters = new Map<string, { inc(value?: number): void }>();
  private readonly histograms = new Map<string, { observe(value: number): void }>();
  /** Counts of the hot path's labelled counters not yet handed to prom-client (see `counter`). */
  private readonly uncounted: Array<{ value: number; handOver(value: number): void }> = [];

  /** One HTTP response (by route pattern and status). */
  recordRequest(route: string, status: number, seconds: number): void {
    this.counter(this.requests, `req|${route}|${status}`, { route, status: String(status) }).inc();
    this.histogram(this.requestDuration, `dur|${route}`, { route }).observe(seconds);
  }

  /** One finished chat request: upstream latency, and for successes the tokens and credits it metered. */
  recordChat(
    provider: string,
    model: string,
    ok: boolean,
    seconds: number,
    usage?: { prompt: number; completion: number; usd: number },
  ): void {
    const outcome = ok ? 'ok' : 'error';
    this.histogram(this.upstreamDuration, `up|${provider}|${outcome}`, { provider, outcome }).observe(seconds);
    if (!usage) return;
    this.counter(this.tokens, `tok|${model}|prompt`, { model, kind: 'prompt' }).inc(usage.prompt);
    this.counter(this.tokens, `tok|${model}|completion`, { model, kind: 'completion' }).inc(usage.completion);
    this.counter(this.creditsDebited, `usd|${model}`, { model }).inc(usage.usd);
  }

  // prom-client hashes and validates the label object on every `inc`, even through a labelled child, several
  // times per request: the hot path adds to plain numbers, handed over when the metrics are read.
  private counter<T extends string>(
    metric: Counter<T>,
    key: string,
    labels: Partial<Record<T, string>>,
  ): { inc(value?: number): void } {
    let child = this.counters.get(key);
    if (!child) {
      const entry = { value: 0, handOver: (value: number) => metric.inc(labels, value) };
      this.uncounted.push(entry);
      this.counters.set(key, (child = { inc: (value = 1) => void (entry.value += value) }));
    }
    return child;
  }

  /** Called by prom-client before it reads any of the hot path's counters. */
  private handOver(): void {
    for (const entry of this.uncounted) {
      if (entry.value === 0) continue;
      entry.handOver(entry.value);
      entry.value = 0;
    }
  }

  private histogram<T extends string>(
    metric: Histogram<T>,
    key: string,
    labels: Partial<Record<T, string>>,
  ): { observe(value: number): void } {
    let child = this.histograms.get(key);
    if (!child) this.histograms.set(key, (child = metric.labels(labels)));
    return child;
  }
}
