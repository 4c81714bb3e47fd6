/** What the request path is built from (the app wires it once), and what one request carries through it. */
import type { Authenticator } from '../auth/index.js';
import type { PlanLimits, Reservation, Wallet } from '../billing/index.js';
import type { Catalog, CatalogModel, LiveFigures } from '../catalog/index.js';
import type { EventSink } from '../events/index.js';
import type { RateLimiter } from '../limits/index.js';
import type { Metrics } from '../observability/index.js';
import type { Router } from '../routing/index.js';
import type { AccountSettings } from '../storage/index.js';
import type { Idempotency } from './idempotency.js';

export interface GatewayDeps {
  auth: Authenticator;
  catalog: Catalog;
  router: Router;
  limiter: RateLimiter;
  wallet: Wallet;
  performance: LiveFigures;
  metrics: Metrics;
  limitsFor(account: { plan: string; settings: AccountSettings }): PlanLimits;
  upstreamTimeoutMs: number;
  /** Idempotency-Key handling: first answers kept 24 h per account and key. */
  idempotency: Idempotency;
  /** Where `llm.*` events go (webhooks); nothing is built for a type the account's webhooks do not want. */
  events?: EventSink;
}

/** One admitted request, once routing has named the deployment that answered (or failed). */
export interface RequestContext {
  readonly requestId: string;
  /** The path the request came on, and the id its answer has when the endpoint chose it (a translation's). */
  readonly endpoint: string | undefined;
  readonly answerId: string | undefined;
  /** Aborted when the client goes away. */
  readonly signal: AbortSignal;
  /** The model that answered: a fallback model when the requested one failed. */
  readonly model: CatalogModel;
  readonly providerId: string;
  readonly promptTokens: number;
  /**
   * The most prompt tokens the provider may bill, as held: `promptTokens`, or the model's whole context when the
   * body names content the provider fetches (files, URLs, search results) or a conversation of unknown size. A
   * stream cut short is charged this prompt: the provider took it in whole and will not say how much it was.
   */
  readonly promptCeiling: number;
  /** The service tier the request asked for: its prices apply when the answer does not say which served it. */
  readonly serviceTier?: string | undefined;
  /** Input images the request sends (a per-image fee: providers do not report them). */
  readonly images?: number;
  readonly reservation: Reservation;
  readonly started: number;
  readonly deps: GatewayDeps;
  /** The request's `user` (llm.* events' `userId`). */
  readonly userId: string | undefined;
  readonly stream: boolean;
  /** The prompt's text for llm.* events, built only when an event is. */
  promptText(): string;
  log(fields: Record<string, unknown>): void;
}
