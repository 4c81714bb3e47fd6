/**
 * The composition root: builds every part once and hands each what it needs. `main.ts` runs it in a process;
 * tests build it in-process on a free port.
 */
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { AdminService, adminTokenChecker, bootstrap, keySecret, type FirstStart } from './admin/index.js';
import { Authenticator } from './auth/index.js';
import {
  RedisCreditState,
  Wallet,
  parseUsd,
  paymentProcessors,
  planLimits,
  rechargeLimits,
  type PaymentProcessor,
} from './billing/index.js';
import { Catalog, LiveFigures } from './catalog/index.js';
import { LocalChangeBus, RedisChangeBus, type ChangeBus } from './cluster/index.js';
import type { Config } from './config/index.js';
import { fanOut, type EventSink } from './events/index.js';
import { registerDashboard } from './dashboard/index.js';
import { Idempotency } from './gateway/index.js';
import { buildHttpServer, type HttpDeps } from './http/index.js';
import { MemoryRateLimiter, RedisRateLimiter, type RateLimiter } from './limits/index.js';
import { Metrics, createLogger } from './observability/index.js';
import { cardRechargeProcessor, createPayments } from './payments/index.js';
import { Router } from './routing/index.js';
import { JournalInUseError, openStorage, type Storage } from './storage/index.js';
import { Webhooks } from './webhooks/index.js';

export interface App {
  config: Config;
  server: FastifyInstance;
  storage: Storage;
  admin: AdminService;
  wallet: Wallet;
  webhooks: Webhooks;
  /** Set when this start created the admin token and first account. */
  firstStart: FirstStart | undefined;
  listen(): Promise<string>;
  close(): Promise<void>;
}

export interface AppOptions {
  logger?: Logger;
  events?: EventSink;
  /** Payment processors besides the built-in `invoice`. */
  processors?: PaymentProcessor[];
  limiter?: RateLimiter;
}

export async function createApp(config: Config, options: AppOptions = {}): Promise<App> {
  const logger = options.logger ?? createLogger(config.log_level);
  const storage = await openStorage({
    dataDir: config.storage.data_dir,
    databaseUrl: config.storage.database_url,
    onCheckpointError: (error) =>
      logger.warn({ err: error }, 'the SQLite checkpoint worker failed; commits checkpoint the WAL themselves'),
    ledgerJournal: true,
    onJournalError: (error) =>
      error instanceof JournalInUseError
        ? logger.warn(
            { err: error },
            'another process holds the ledger journal of this data directory; this one writes each charge to SQLite directly',
          )
        : logger.error(
            { err: error },
            'writing the ledger journal to SQLite failed; its charges stay in the journal and are written again',
          ),
  });
  const secret = await keySecret(storage, config);
  const metrics = new Metrics();
  const limitsFor = planLimits(config);
  // Events go to the webhook outbox (and to a sink of the caller's, e.g. a test's, when given).
  const webhooks = new Webhooks({
    storage,
    settings: config.webhooks,
    logger: logger.child({ module: 'webhooks' }),
    onAttempt: ({ row, outcome, status, at }) =>
      metrics.recordWebhookAttempt(status, outcome.durationMs / 1000, (at - row.createdAt) / 1000),
  });
  metrics.observeWebhooks({
    queueDepth: () => webhooks.queueDepth(),
    inFlight: () => webhooks.worker.inFlightByWebhook,
  });
  const events: EventSink = options.events ? fanOut(options.events, webhooks.sink) : webhooks.sink;
  const card = cardRechargeProcessor({ storage, config, logger: logger.child({ module: 'payments' }) });
  const processors = paymentProcessors([...(options.processors ?? []), ...(card ? [card] : [])]);
  const auth = new Authenticator({ storage, secret, prefix: config.key_prefix });
  const wallet = new Wallet({
    storage,
    limitsFor,
    defaultThresholdsNano: config.credits.low_balance_thresholds.map((t) => parseUsd(t)),
    holdWaits: { maxWaitMs: config.credits.wait_for_holds_ms, perAccount: config.credits.waiters_per_account },
    events,
    recharge: {
      processors,
      limits: rechargeLimits(config),
      onRefused: (accountId, reason) => logger.warn({ accountId, reason }, 'auto-recharge held back by a limit'),
      events,
      // `changes` exists by the time a recharge runs (after a debit, once the server listens).
      onAccountChanged: (accountId) => changes.publish({ accountId }),
    },
    // Replicas share holds in Redis so none can spend what another holds; one process keeps them in memory.
    ...(config.redis_url
      ? {
          credits: new RedisCreditState({
            url: config.redis_url,
            prefix: config.redis_prefix,
            storage,
            onError: (error) => {
              metrics.redisErrors.inc();
              logger.warn({ err: error }, 'credit state in Redis failed; retrying');
            },
          }),
        }
      : {}),
    onError: (error) => {
      metrics.storageErrors.inc();
      logger.error({ err: error }, 'credit write failed; retrying');
    },
    onEventError: (error) =>
      logger.error({ err: error }, 'the events of a settlement could not be built; they are lost'),
    onUsageCapped: (capped) => {
      metrics.usageCapped.inc({ model: capped.model });
      logger.warn(capped, 'the upstream reported more tokens than the request allowed; billed at the allowance');
    },
  });
  metrics.countReservations(() => wallet.reservationsOpen);
  // Key revocations and account changes, made by this replica or another: every replica drops its cached copies.
  const changes: ChangeBus = config.redis_url
    ? new RedisChangeBus({
        url: config.redis_url,
        prefix: config.redis_prefix,
        onError: () => metrics.redisErrors.inc(),
      })
    : new LocalChangeBus();
  changes.subscribe(async ({ accountId }) => {
    auth.invalidate();
    // If the database cannot answer now, the accounts' 1 s refresh picks the change up.
    const record = accountId ? await storage.accounts.get(accountId).catch(() => undefined) : undefined;
    if (record) wallet.accounts.applyRecord(record);
  });
  const admin = new AdminService(
    storage,
    config,
    secret,
    { onChange: (change) => changes.publish(change) },
    processors,
  );
  const payments = createPayments({
    storage,
    config,
    logger: logger.child({ module: 'payments' }),
    events,
    onCredited: (accountId) => changes.publish({ accountId }),
  });
  const firstStart = await bootstrap(storage, config, admin);
  const isAdminToken = await adminTokenChecker(storage, config);
  const catalog = new Catalog(config);
  const tracker = new LiveFigures();
  const router = new Router(config, { catalog, performance: tracker });
  // The catalog's model status reads the router's live deployment health.
  catalog.setHealth(router.health);
  const limiter: RateLimiter =
    options.limiter ??
    (config.redis_url
      ? new RedisRateLimiter({
          url: config.redis_url,
          prefix: config.redis_prefix,
          onError: () => metrics.redisErrors.inc(),
        })
      : new MemoryRateLimiter());
  const httpDeps: HttpDeps = {
    config,
    storage,
    admin,
    processors,
    isAdminToken,
    payments,
    auth,
    catalog,
    router,
    limiter,
    wallet,
    performance: tracker,
    metrics,
    limitsFor,
    upstreamTimeoutMs: config.server.upstream_timeout_ms,
    // A claim whose request never finished (its process died) frees its key after twice the upstream timeout.
    idempotency: new Idempotency({
      store: storage.idempotency,
      leaseMs: Math.max(120_000, 2 * config.server.upstream_timeout_ms),
      onError: (error) => logger.warn({ err: error }, 'idempotency key write failed'),
    }),
    events,
    webhooks: webhooks.service,
  };
  const server = buildHttpServer(
    {
      metrics,
      bodyLimitBytes: config.server.body_limit_bytes,
      requestTimeoutMs: config.server.request_timeout_ms,
      corsOrigins: config.server.cors_origins,
      trustProxy: config.server.trust_proxy,
      logger,
    },
    httpDeps,
  );
  if (config.dashboard.enabled) registerDashboard(server, httpDeps);
  wallet.start();
  await webhooks.start();
  payments.start();

  return {
    config,
    server,
    storage,
    admin,
    wallet,
    webhooks,
    firstStart,
    listen: () => server.listen({ port: config.server.port, host: config.server.host }),
    close: async () => {
      await server.close();
      await payments.stop();
      await wallet.stop();
      // After the wallet: its last commits may still raise events.
      await webhooks.stop();
      await router.close();
      await limiter.close?.();
      await changes.close();
      auth.close();
      await storage.close();
    },
  };
}
