/**
 * `POST /webhooks/stripe`: Stripe's signed events. A paid Checkout Session credits its purchase with a ledger `topup`
 * in one transaction with the event's record and the purchase's move from pending to paid (storage's
 * `purchasePaid`), so a purchase is credited once whatever the order and number of deliveries. A succeeded
 * PaymentIntent of a card auto-recharge credits it the same way (`rechargePaid`, ./card-recharge.ts). Refunds and
 * disputes take the payment back (./reversals.ts). Anything Stripe sends that tollgate does not act on is
 * acknowledged and ignored.
 */
import Stripe from 'stripe';
import type { Logger } from 'pino';
import { RechargeFailure, creditRecharge, recordRechargeFailure, usdString } from '../billing/index.js';
import type { EventSink } from '../events/index.js';
import { invalidRequest } from '../errors/index.js';
import type { PurchaseRecord, Storage } from '../storage/index.js';
import { keepReceipt } from './card-recharge.js';
import { STRIPE } from './purchases.js';
import { Reversals } from './reversals.js';
import { idOf, NANO_PER_CENT, receiptOf } from './stripe-client.js';
import { cents, checkSignatureTime, eventOf, SIGNATURE_TOLERANCE_S, text } from './stripe-event-shape.js';

export interface StripeEventsOptions {
  storage: Storage;
  stripe: Stripe | undefined;
  webhookSecret: string | undefined;
  logger: Logger;
  /** Where `credit.recharge_failed` goes when Stripe reports a pending recharge failed. */
  events?: EventSink | undefined;
  /** An account's balance changed (a credit, a refund, a dispute): caches must reload it. */
  onCredited: (accountId: string) => void | Promise<void>;
}

export type EventOutcome = 'credited' | 'debited' | 'already_applied' | 'recorded' | 'ignored';

export class StripeEvents {
  private readonly reversals: Reversals;

  constructor(private readonly options: StripeEventsOptions) {
    this.reversals = new Reversals(options.storage, options.stripe, options.logger, options.onCredited);
  }

  /** Verifies the signature over the raw body (400 if it does not hold, nothing changes), then applies the event. */
  async receive(rawBody: Buffer, signature: string | undefined): Promise<EventOutcome> {
    const { webhookSecret } = this.options;
    if (!webhookSecret)
      throw invalidRequest('Stripe webhooks are not configured on this gateway (STRIPE_WEBHOOK_SECRET is not set)');
    let parsed: unknown;
    try {
      parsed = Stripe.webhooks.constructEvent(rawBody, signature ?? '', webhookSecret, SIGNATURE_TOLERANCE_S);
    } catch (error) {
      if (error instanceof SyntaxError) throw invalidRequest('The signed body is not JSON');
      throw invalidRequest('The Stripe-Signature header is missing or does not match the body', 'Stripe-Signature');
    }
    checkSignatureTime(signature!);
    const event = eventOf(parsed);
    switch (event.type) {
      case 'checkout.session.completed':
        // Bank debits and other delayed methods complete unpaid; their async_payment_succeeded credits.
        return event.data.object.payment_status === 'paid' ? this.credit(event, event.data.object) : 'ignored';
      case 'checkout.session.async_payment_succeeded':
        return this.credit(event, event.data.object);
      case 'checkout.session.expired':
        return this.close(event.data.object, 'expired');
      case 'checkout.session.async_payment_failed':
        return this.close(event.data.object, 'failed');
      case 'payment_intent.succeeded':
        return this.creditRecharge(event.data.object);
      case 'payment_intent.payment_failed':
        return this.failRecharge(event.data.object);
      case 'charge.refunded':
        return this.reversed(await this.reversals.refunded(event.data.object));
      case 'charge.dispute.created':
      case 'charge.dispute.updated':
      case 'charge.dispute.closed':
        return this.reversed(await this.reversals.disputed(event.data.object));
      default:
        return 'ignored';
    }
  }

  /**
   * Credits a paid session's purchase once. `event` is Stripe's event, or what stands for it when the gateway asked
   * Stripe for the session itself (./checkout-checks.ts): its id is recorded in `payment_events`.
   */
  async credit(event: { id: string; type: string }, session: Stripe.Checkout.Session): Promise<EventOutcome> {
    const purchase = await this.purchaseOf(session);
    if (!purchase) return 'ignored';
    const paymentIntentId = text(idOf(session.payment_intent)) ?? null;
    const result = await this.options.storage.ledger.commit({
      entries: [
        {
          accountId: purchase.accountId,
          kind: 'topup',
          amountNano: purchase.amountNano,
          note: `Stripe payment ${paymentIntentId ?? session.id} (purchase ${purchase.id})`,
        },
      ],
      audit: [
        {
          accountId: purchase.accountId,
          actor: { type: 'processor', id: STRIPE },
          action: 'payment.purchase',
          target: { type: 'purchase', id: purchase.id },
          after: { amount: usdString(purchase.amountNano), payment: paymentIntentId ?? session.id, event: event.id },
        },
      ],
      purchasePaid: {
        purchaseId: purchase.id,
        processor: STRIPE,
        eventId: event.id,
        eventType: event.type,
        paymentIntentId,
        at: Date.now(),
      },
    });
    if (result.purchasePaid) await this.announce(purchase.accountId);
    // On every delivery until it is stored: a failure here answers 500 and Stripe delivers again (the credit stays once).
    if (purchase.receiptUrl === null) await this.keepPaymentDetails(purchase, session, paymentIntentId);
    return result.purchasePaid ? 'credited' : 'already_applied';
  }

  /** The auto-recharge a PaymentIntent paid for, unless it was credited already (by Stripe's synchronous answer). */
  private async creditRecharge(intent: Stripe.PaymentIntent): Promise<EventOutcome> {
    const rechargeId = text(intent.metadata?.recharge_id);
    if (!rechargeId) return 'ignored';
    const recharge = await this.options.storage.recharges.get(rechargeId);
    const charged = cents(intent.amount_received || intent.amount);
    if (
      !recharge ||
      intent.currency !== 'usd' ||
      charged === undefined ||
      BigInt(charged) * NANO_PER_CENT !== recharge.amountNano
    ) {
      this.options.logger.error(
        { paymentIntentId: intent.id, rechargeId },
        'a Stripe payment intent matches no auto-recharge (id, amount or currency); nothing credited',
      );
      return 'ignored';
    }
    const result = await creditRecharge(this.options.storage, {
      accountId: recharge.accountId,
      rechargeId,
      amountNano: recharge.amountNano,
      processor: STRIPE,
      reference: intent.id,
    });
    if (!result.rechargePaid) return 'already_applied';
    await this.announce(recharge.accountId);
    if (this.options.stripe)
      await keepReceipt(this.options.storage, this.options.stripe, rechargeId, intent.id, this.options.logger);
    return 'credited';
  }

  /**
   * A recharge left pending (its PaymentIntent was `processing`) that failed later: it frees the account for the
   * next, and is a failure like a declined charge (the event, and auto-recharge off after the limit).
   */
  private async failRecharge(intent: Stripe.PaymentIntent): Promise<EventOutcome> {
    const rechargeId = text(intent.metadata?.recharge_id);
    const recharge = rechargeId ? await this.options.storage.recharges.get(rechargeId) : undefined;
    if (!recharge) return 'ignored';
    const code = text(intent.last_payment_error?.code) ?? 'payment_failed';
    const message =
      text(intent.last_payment_error?.message) ?? 'the payment failed after it was accepted for processing';
    if (!(await this.options.storage.recharges.fail(recharge.id, `${code}: ${message}`, Date.now())))
      return 'already_applied';
    const failure = new RechargeFailure(code, message, {
      rechargeId: recharge.id,
      declineCode: text(intent.last_payment_error?.decline_code) ?? null,
      paymentIntentId: intent.id,
    });
    await recordRechargeFailure(
      this.options.storage,
      this.options.events,
      recharge.accountId,
      recharge.amountNano,
      failure,
    );
    await this.announce(recharge.accountId);
    return 'recorded';
  }

  private reversed(outcome: { accountId: string; movedNano: bigint } | undefined): EventOutcome {
    if (!outcome) return 'ignored';
    if (outcome.movedNano === 0n) return 'already_applied';
    return outcome.movedNano < 0n ? 'debited' : 'credited';
  }

  /** Caches reload the balance at once; if that fails, their 1 s refresh still does (the credit is committed). */
  private async announce(accountId: string): Promise<void> {
    try {
      await this.options.onCredited(accountId);
    } catch (error) {
      this.options.logger.warn(
        { err: error, accountId },
        'a credited purchase could not be announced to the caches; they pick it up within a second',
      );
    }
  }

  /** The purchase a session is for, if the session matches it (same session, amount and currency). */
  private async purchaseOf(session: Stripe.Checkout.Session): Promise<PurchaseRecord | undefined> {
    const id = text(session.metadata?.purchase_id) ?? text(session.client_reference_id);
    const purchase = id ? await this.options.storage.purchases.get(id) : undefined;
    const paid = cents(session.amount_total);
    const matches =
      purchase !== undefined &&
      (purchase.checkoutSessionId === null || purchase.checkoutSessionId === session.id) &&
      session.currency === 'usd' &&
      paid !== undefined &&
      BigInt(paid) * NANO_PER_CENT === purchase.amountNano;
    if (!matches) {
      this.options.logger.error(
        { sessionId: session.id, purchaseId: id },
        'a Stripe checkout session matches no purchase (id, amount or currency); nothing credited',
      );
      return undefined;
    }
    return purchase;
  }

  /** The Stripe customer and the card saved for off-session charges (kept on the account), and the receipt link. */
  private async keepPaymentDetails(
    purchase: PurchaseRecord,
    session: Stripe.Checkout.Session,
    paymentIntentId: string | null,
  ): Promise<void> {
    const { storage, stripe } = this.options;
    const customerId = text(idOf(session.customer));
    if (!stripe || !paymentIntentId) return;
    const { receiptUrl, paymentMethodId } = await receiptOf(stripe, paymentIntentId);
    if (customerId && paymentMethodId)
      await storage.purchases.savePaymentMethod(purchase.accountId, STRIPE, customerId, paymentMethodId);
    if (receiptUrl) await storage.purchases.setReceipt(purchase.id, receiptUrl);
  }

  private async close(session: Stripe.Checkout.Session, status: 'expired' | 'failed'): Promise<EventOutcome> {
    const purchase = await this.purchaseOf(session);
    if (!purchase) return 'ignored';
    await this.options.storage.purchases.close(purchase.id, status);
    return 'recorded';
  }
}
