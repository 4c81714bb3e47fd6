/**
 * The self-serve payment processor: an auto-recharge charges the card the account saved at Checkout, off-session,
 * with one Stripe PaymentIntent (`confirm`, `off_session`, the recharge id in its metadata and idempotency key).
 * A recharge row (storage's `card_recharges`) is written first; only one per account may be pending, in every
 * replica, so an account is never charged twice for one dip below its threshold. The credit follows only
 * Stripe's `succeeded`, here or by `payment_intent.succeeded` (./stripe-events.ts), whichever comes first.
 */
import Stripe from 'stripe';
import type { Logger } from 'pino';
import { RechargeFailure, type ChargeResult, type PaymentProcessor } from '../billing/index.js';
import { usdString, type Nano } from '../money/index.js';
import { newId, type PaymentCustomer, type RechargeRecord, type Storage } from '../storage/index.js';
import { STRIPE } from './purchases.js';
import { NANO_PER_CENT, receiptOf } from './stripe-client.js';

/** A pending recharge not settled within this long is taken over (its process died): sent again with its key. */
export const RECHARGE_LEASE_MS = 5 * 60_000;

export class CardRecharge implements PaymentProcessor {
  readonly id = STRIPE;
  readonly selfServe = true;

  constructor(
    private readonly storage: Storage,
    private readonly stripe: Stripe,
    private readonly logger: Logger,
  ) {}

  async charge({
    accountId,
    amountNano,
    thresholdNano,
  }: {
    accountId: string;
    amountNano: Nano;
    thresholdNano: Nano;
  }): Promise<ChargeResult | undefined> {
    const customer = await this.storage.purchases.customer(accountId);
    if (!customer?.paymentMethodId || customer.processor !== STRIPE) {
      throw new RechargeFailure('payment_method_required', 'the account has no saved payment method');
    }
    // Stripe charges whole cents: an amount set with more decimals (before they were refused) is charged, and
    // credited, rounded down to the cent.
    const chargedNano = (amountNano / NANO_PER_CENT) * NANO_PER_CENT;
    if (chargedNano <= 0n) throw new RechargeFailure('invalid_amount', 'the auto-recharge amount is under one cent');
    const recharge = await this.claim(accountId, chargedNano, thresholdNano);
    return recharge && this.pay(recharge, customer);
  }

  /** This process's pending recharge row, or undefined when another is in flight or none is needed any more. */
  private async claim(accountId: string, amountNano: Nano, thresholdNano: Nano): Promise<RechargeRecord | undefined> {
    const at = Date.now();
    const id = newId('rch');
    const begun = await this.storage.recharges.begin({ id, accountId, amountNano, processor: STRIPE, at });
    if (!begun.started) {
      const stale = begun.pending && (await this.storage.recharges.reclaim(begun.pending, at - RECHARGE_LEASE_MS, at));
      return stale ? begun.pending : undefined;
    }
    // The recharge before this one may have landed between the debit that asked and the row above.
    const account = await this.storage.accounts.get(accountId);
    if (!account || account.balanceNano >= thresholdNano) {
      await this.storage.recharges.drop(id);
      return undefined;
    }
    return (await this.storage.recharges.get(id))!;
  }

  private async pay(recharge: RechargeRecord, customer: PaymentCustomer): Promise<ChargeResult> {
    let intent: Stripe.PaymentIntent;
    try {
      intent = await this.stripe.paymentIntents.create(
        {
          amount: Number(recharge.amountNano / NANO_PER_CENT),
          currency: 'usd',
          customer: customer.customerId,
          payment_method: customer.paymentMethodId!,
          confirm: true,
          off_session: true,
          description: `Auto-recharge: ${usdString(recharge.amountNano)} USD`,
          metadata: { recharge_id: recharge.id, account_id: recharge.accountId },
        },
        { idempotencyKey: `recharge-${recharge.id}` },
      );
    } catch (error) {
      throw await this.failed(recharge, describe(error));
    }
    await this.storage.recharges.setPaymentIntent(recharge.id, intent.id);
    // The credit is what Stripe says it charged, in cents.
    const charged = BigInt(intent.amount_received || intent.amount) * NANO_PER_CENT;
    const done = { reference: intent.id, rechargeId: recharge.id, amountNano: charged };
    if (intent.status === 'succeeded') {
      await keepReceipt(this.storage, this.stripe, recharge.id, intent.id, this.logger);
      return done;
    }
    if (intent.status === 'processing') return { ...done, pending: true };
    const code = intent.status === 'requires_action' ? 'authentication_required' : 'payment_not_completed';
    throw await this.failed(recharge, {
      code,
      message: `the payment is ${intent.status.replaceAll('_', ' ')}`,
      declineCode: null,
      paymentIntentId: intent.id,
    });
  }

  private async failed(recharge: RechargeRecord, failure: Failure): Promise<RechargeFailure> {
    this.logger.warn(
      { accountId: recharge.accountId, rechargeId: recharge.id, ...failure },
      'a card auto-recharge failed; nothing credited',
    );
    // Stripe's reference of a declined charge, shown with the failed recharge.
    if (failure.paymentIntentId) await this.storage.recharges.setPaymentIntent(recharge.id, failure.paymentIntentId);
    await this.storage.recharges.fail(recharge.id, `${failure.code}: ${failure.message}`, Date.now());
    return new RechargeFailure(failure.code, failure.message, {
      rechargeId: recharge.id,
      declineCode: failure.declineCode,
      paymentIntentId: failure.paymentIntentId,
    });
  }
}

/** Stripe's receipt link of a succeeded recharge, kept on its row; a failure to fetch it only costs the link. */
export async function keepReceipt(
  storage: Storage,
  stripe: Stripe,
  rechargeId: string,
  paymentIntentId: string,
  logger: Logger,
): Promise<void> {
  try {
    const { receiptUrl } = await receiptOf(stripe, paymentIntentId);
    if (receiptUrl) await storage.recharges.setReceipt(rechargeId, receiptUrl);
  } catch (error) {
    logger.warn({ err: error, rechargeId }, 'the receipt of a card recharge could not be fetched from Stripe');
  }
}

interface Failure {
  code: string;
  message: string;
  declineCode: string | null;
  paymentIntentId: string | null;
}

/** Stripe's refusal in words the account's user may read (never the API key or Stripe's request details). */
function describe(error: unknown): Failure {
  if (error instanceof Stripe.errors.StripeCardError) {
    const intent = error.payment_intent;
    const declineCode = error.decline_code ?? null;
    const message =
      error.code === 'authentication_required'
        ? 'the card needs authentication (3-D Secure), which an automatic charge cannot do'
        : `the card was declined${declineCode ? ` (${declineCode})` : ''}`;
    return { code: error.code ?? 'card_declined', message, declineCode, paymentIntentId: intent?.id ?? null };
  }
  return {
    code: 'processor_unavailable',
    message: 'the payment processor could not be reached or refused the request',
    declineCode: null,
    paymentIntentId: null,
  };
}
