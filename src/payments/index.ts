/**
 * Payments' public face: users buying credit through Stripe Checkout (docs/payments.md). Without a Stripe secret
 * key purchasing is off and says so; the rest of the gateway works the same.
 */
import type { Logger } from 'pino';
import type { PaymentProcessor } from '../billing/index.js';
import type { Config } from '../config/index.js';
import type { EventSink } from '../events/index.js';
import type { Storage } from '../storage/index.js';
import { CardRecharge } from './card-recharge.js';
import { CheckoutChecks, SESSION_RETRIEVED } from './checkout-checks.js';
import { Purchases } from './purchases.js';
import { Reversals } from './reversals.js';
import { StripeEvents } from './stripe-events.js';
import { stripeClient } from './stripe-client.js';

export { stripeClient } from './stripe-client.js';

export { Purchases, type Buyer } from './purchases.js';
export { CardRecharge, RECHARGE_LEASE_MS } from './card-recharge.js';
export { StripeEvents, type EventOutcome } from './stripe-events.js';
export { Reversals, type Refunded } from './reversals.js';
export { CreatePurchaseSchema, type CreatePurchaseBody } from './schemas.js';

export interface Payments {
  purchases: Purchases;
  stripeEvents: StripeEvents;
  /** Refunds and disputes; an operator's refund of a purchase. */
  reversals: Reversals;
  /** Starts the periodic check of purchases still pending (./checkout-checks.ts), when Stripe is configured. */
  start(): void;
  stop(): Promise<void>;
}

export function createPayments(options: {
  storage: Storage;
  config: Config;
  logger: Logger;
  events?: EventSink;
  onCredited: (accountId: string) => void | Promise<void>;
}): Payments {
  const { secret_key, webhook_secret, api_base } = options.config.payments.stripe;
  const stripe = secret_key ? stripeClient(secret_key, api_base) : undefined;
  if (stripe && !webhook_secret)
    options.logger.warn(
      "STRIPE_SECRET_KEY is set without STRIPE_WEBHOOK_SECRET: Stripe's events are refused, so purchases are credited only when the gateway asks Stripe (the buyer's return, the check of pending purchases), and refunds and disputes are not seen",
    );
  const stripeEvents = new StripeEvents({
    storage: options.storage,
    stripe,
    webhookSecret: webhook_secret,
    logger: options.logger,
    events: options.events,
    onCredited: options.onCredited,
  });
  const { pending_check_after_seconds, pending_check_interval_seconds } = options.config.payments.purchase;
  const checks =
    stripe &&
    new CheckoutChecks({
      storage: options.storage,
      stripe,
      credit: (session) => stripeEvents.credit({ id: session.id, type: SESSION_RETRIEVED }, session),
      logger: options.logger,
      checkAfterMs: pending_check_after_seconds * 1000,
      intervalMs: pending_check_interval_seconds * 1000,
    });
  return {
    purchases: new Purchases(options.storage, options.config, stripe, options.logger, checks),
    stripeEvents,
    reversals: new Reversals(options.storage, stripe, options.logger, options.onCredited),
    start: () => checks?.start(),
    stop: async () => checks?.stop(),
  };
}

/** Auto-recharge by saved card, when Stripe is configured (docs/payments.md#auto-recharge-by-card). */
export function cardRechargeProcessor(options: {
  storage: Storage;
  config: Config;
  logger: Logger;
}): PaymentProcessor | undefined {
  const { secret_key, api_base } = options.config.payments.stripe;
  return secret_key ? new CardRecharge(options.storage, stripeClient(secret_key, api_base), options.logger) : undefined;
}
