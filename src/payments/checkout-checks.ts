/**
 * Purchases are credited even when Stripe's webhook is late or never comes: the gateway asks Stripe for the
 * Checkout Session itself, as Stripe advises (fulfil from the webhook and from the buyer's return), when the buyer
 * reads a pending purchase (the return page polls it) and, in every process, for purchases pending longer than
 * `payments.purchase.pending_check_after_seconds`. A paid session is credited through the webhook's own
 * exactly-once path (`StripeEvents.credit`): whichever of the webhook, the return and the checks of every replica
 * comes first credits, the others find the purchase no longer pending.
 */
import type Stripe from 'stripe';
import type { Logger } from 'pino';
import type { PurchaseRecord, Storage } from '../storage/index.js';

/** What the credit of a session asked for is recorded as in `payment_events` (with the session's id). */
export const SESSION_RETRIEVED = 'checkout.session.retrieved';
/** One process asks Stripe about one purchase at most this often, however often it is read. */
const ASK_AT_MOST_EVERY_MS = 1_500;
/** Checkout Sessions expire within a day; delayed payment methods settle within two weeks. */
const CHECK_WINDOW_MS = 14 * 86_400_000;
const CHECKS_PER_RUN = 50;
const REMEMBERED_MAX = 10_000;

export interface CheckoutChecksOptions {
  storage: Storage;
  stripe: Stripe;
  /** Credits a paid session's purchase once (`StripeEvents.credit`). */
  credit: (session: Stripe.Checkout.Session) => Promise<unknown>;
  logger: Logger;
  checkAfterMs: number;
  intervalMs: number;
}

export class CheckoutChecks {
  private readonly askedAt = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopped = false;

  constructor(private readonly options: CheckoutChecksOptions) {}

  /** The purchase as it stands once Stripe was asked (when it is pending); Stripe failing leaves it as stored. */
  async check(purchase: PurchaseRecord): Promise<PurchaseRecord> {
    const sessionId = purchase.checkoutSessionId;
    if (purchase.status !== 'pending' || sessionId === null || this.askedRecently(purchase.id)) return purchase;
    const { storage, stripe, logger } = this.options;
    try {
      const session = await stripe.checkout.sessions.retrieve(sessionId);
      if (session.status === 'complete' && session.payment_status === 'paid') await this.options.credit(session);
      else if (session.status === 'expired') await storage.purchases.close(purchase.id, 'expired');
    } catch (error) {
      logger.warn({ err: error, purchaseId: purchase.id }, 'a pending purchase could not be checked at Stripe');
    }
    return (await storage.purchases.get(purchase.id)) ?? purchase;
  }

  /** Checks the purchases pending longer than `checkAfterMs`; returns how many were looked at. */
  async checkPending(now = Date.now()): Promise<number> {
    const pending = await this.options.storage.purchases.pendingCheckouts({
      after: now - CHECK_WINDOW_MS,
      before: now - this.options.checkAfterMs,
      limit: CHECKS_PER_RUN,
    });
    for (const purchase of pending) {
      if (this.stopped) break;
      await this.check(purchase);
    }
    return pending.length;
  }

  /** Runs `checkPending` every `intervalMs`, give or take a quarter, so replicas do not ask Stripe in step. */
  start(): void {
    const next = () => {
      if (this.stopped) return;
      const delay = this.options.intervalMs * (0.75 + Math.random() / 2);
      this.timer = setTimeout(() => {
        this.running = this.checkPending()
          .catch((error: unknown) =>
            this.options.logger.warn({ err: error }, 'the check of pending purchases failed; it runs again later'),
          )
          .finally(next);
      }, delay);
      this.timer.unref();
    };
    next();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  private askedRecently(purchaseId: string): boolean {
    const now = Date.now();
    const last = this.askedAt.get(purchaseId);
    if (last !== undefined && now - last < ASK_AT_MOST_EVERY_MS) return true;
    if (this.askedAt.size >= REMEMBERED_MAX)
      for (const [id, at] of this.askedAt) if (now - at >= ASK_AT_MOST_EVERY_MS) this.askedAt.delete(id);
    this.askedAt.set(purchaseId, now);
    return false;
  }
}
