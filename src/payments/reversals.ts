/**
 * Payments taken back: refunds and disputes debit the account in full, in the ledger (kinds `refund`, `dispute`),
 * so the balance may go below zero; spending then stops until credit is added (docs/payments.md#refunds-and-disputes).
 * Each is applied by its running total per charge or dispute (`paymentReversed` in storage), so Stripe's repeated and
 * out-of-order deliveries take a payment back once. An operator refunds a purchase through Stripe here too.
 */
import Stripe from 'stripe';
import type { Logger } from 'pino';
import { GatewayError, invalidRequest } from '../errors/index.js';
import { usdString, type Nano } from '../money/index.js';
import type { Actor, PaidPayment, Storage } from '../storage/index.js';
import { idOf, NANO_PER_CENT } from './stripe-client.js';
import { cents, text } from './stripe-event-shape.js';

const STRIPE = 'stripe';
const STRIPE_ACTOR: Actor = { type: 'processor', id: STRIPE };
/** A dispute closed with the money back with the merchant: nothing stays taken back. */
const DISPUTE_RETURNED = new Set(['won', 'warning_closed']);
const DISPUTE_CLOSED = new Set(['won', 'lost', 'warning_closed']);

export interface ReversalOutcome {
  accountId: string;
  /** What the ledger moved now: negative when it took money back, positive when a won dispute gave it back. */
  movedNano: Nano;
  /** The account's balance right after, when the ledger's answer has it (it does when the ledger moved). */
  balanceNano?: Nano;
}

export interface Refunded {
  refundId: string;
  status: string | null;
  accountId: string;
  purchaseId: string;
  /** How much of the purchase is refunded in all, and what this call debited. */
  refundedNano: Nano;
  debitedNano: Nano;
  /** The account's balance after the refund. */
  balanceNano: Nano;
}

export class Reversals {
  constructor(
    private readonly storage: Storage,
    private readonly stripe: Stripe | undefined,
    private readonly logger: Logger,
    /** An account's balance changed: caches must reload it. */
    private readonly onMoved: (accountId: string) => void | Promise<void>,
  ) {}

  /**
   * `charge.refunded`: the charge's `amount_refunded` is the running total of its refunds. `actor`: who the audit
   * entry names (Stripe, or the operator whose refund this call applies at once).
   */
  async refunded(charge: Stripe.Charge, actor = STRIPE_ACTOR): Promise<ReversalOutcome | undefined> {
    const chargeId = text(charge.id);
    const refunded = cents(charge.amount_refunded);
    if (!chargeId || refunded === undefined) return this.unreadable('charge', charge.id);
    const payment = await this.paymentOf(text(idOf(charge.payment_intent)), charge.currency, chargeId);
    if (!payment) return undefined;
    return this.apply(payment, actor, {
      id: `${STRIPE}:refund:${chargeId}`,
      kind: 'refund',
      cents: refunded,
      final: false,
      note: `Stripe refund of charge ${charge.id} (${payment.kind} ${payment.id})`,
      detail: { charge: chargeId },
    });
  }

  /** `charge.dispute.*`: while open the disputed amount is taken back; a closed dispute keeps it (lost) or returns it. */
  async disputed(dispute: Stripe.Dispute): Promise<ReversalOutcome | undefined> {
    const disputeId = text(dispute.id);
    const disputed = cents(dispute.amount);
    if (!disputeId || disputed === undefined || !text(dispute.status)) return this.unreadable('dispute', dispute.id);
    const payment = await this.paymentOf(text(idOf(dispute.payment_intent)), dispute.currency, disputeId);
    if (!payment) return undefined;
    return this.apply(payment, STRIPE_ACTOR, {
      id: `${STRIPE}:dispute:${disputeId}`,
      kind: 'dispute',
      cents: DISPUTE_RETURNED.has(dispute.status) ? 0 : disputed,
      final: DISPUTE_CLOSED.has(dispute.status),
      note: `Stripe dispute ${dispute.id} of charge ${idOf(dispute.charge)} (${payment.kind} ${payment.id}), ${dispute.status}`,
      detail: { dispute: disputeId, status: dispute.status },
    });
  }

  /**
   * An operator's refund of a paid purchase through Stripe (`amount` omitted: what is left of it). The debit is
   * applied from the refunded charge at once; Stripe's `charge.refunded` later finds it applied. `actor`: the
   * operator (admin API or CLI), named by the refund's audit entry.
   */
  async refund(
    accountId: string,
    purchaseId: string,
    amountNano?: Nano,
    actor: Actor = { type: 'operator', id: null },
  ): Promise<Refunded> {
    if (!this.stripe) throw invalidRequest('Refunds go through Stripe, and this gateway has no STRIPE_SECRET_KEY');
    const purchase = await this.storage.purchases.get(purchaseId);
    if (!purchase || purchase.accountId !== accountId)
      throw new GatewayError('not_found', { message: `No credit purchase ${purchaseId}`, param: 'id' });
    if (purchase.status !== 'paid' || !purchase.paymentIntentId)
      throw invalidRequest(`Purchase ${purchaseId} is ${purchase.status}, not paid: nothing to refund`, 'id');
    const already = await this.storage.purchases.reversedOf(purchase.paymentIntentId);
    const left = purchase.amountNano - already;
    const amount = amountNano ?? left;
    if (amount <= 0n || amount % NANO_PER_CENT !== 0n)
      throw invalidRequest('amount must be a positive USD amount in whole cents', 'amount');
    if (amount > left)
      throw invalidRequest(
        `amount is more than what is left to refund of this purchase (${usdString(left > 0n ? left : 0n)} USD)`,
        'amount',
      );

    let refund: Stripe.Refund;
    let charge: Stripe.Charge | undefined;
    try {
      refund = await this.stripe.refunds.create(
        {
          payment_intent: purchase.paymentIntentId,
          amount: Number(amount / NANO_PER_CENT),
          metadata: { purchase_id: purchase.id },
        },
        // The same refund asked twice (a retried click) is one refund at Stripe.
        { idempotencyKey: `refund-${purchase.id}-${already}-${amount}` },
      );
      const chargeId = idOf(refund.charge);
      charge = chargeId ? await this.stripe.charges.retrieve(chargeId) : undefined;
    } catch (error) {
      this.logger.error({ err: error, purchaseId }, 'Stripe refused or failed a refund');
      // Stripe's refusal of the request itself (already refunded, say) is the operator's to read.
      if (error instanceof Stripe.errors.StripeInvalidRequestError)
        throw invalidRequest(`Stripe refused the refund: ${error.message}`);
      throw new GatewayError('upstream_error', {
        message:
          'Stripe could not be reached or failed; the refund may not have happened. Its charge.refunded event debits it if it did.',
      });
    }
    const applied = charge ? await this.refunded(charge, actor) : undefined;
    const balanceNano = applied?.balanceNano ?? (await this.balanceOf(accountId));
    return {
      refundId: refund.id,
      status: refund.status,
      accountId,
      purchaseId: purchase.id,
      refundedNano: charge ? BigInt(charge.amount_refunded) * NANO_PER_CENT : already + amount,
      debitedNano: applied ? -applied.movedNano : 0n,
      balanceNano,
    };
  }

  /**
   * `detail`: the processor's object (charge or dispute) and its status, for the `payment.reversal` audit entry,
   * written only when the reversal changes something (`total`: how much of the payment it asks back in all).
   */
  private async apply(
    payment: PaidPayment & { reference: string },
    actor: Actor,
    reversal: {
      id: string;
      kind: 'refund' | 'dispute';
      cents: number;
      final: boolean;
      note: string;
      detail: Record<string, string>;
    },
  ): Promise<ReversalOutcome> {
    const totalNano = BigInt(reversal.cents) * NANO_PER_CENT;
    const result = await this.storage.ledger.commit({
      entries: [],
      audit: [
        {
          accountId: payment.accountId,
          actor,
          action: 'payment.reversal',
          target: { type: payment.kind, id: payment.id },
          after: {
            kind: reversal.kind,
            total: usdString(totalNano),
            final: reversal.final,
            payment: payment.reference,
            ...reversal.detail,
          },
        },
      ],
      // The writer caps the payment's refunds and disputes together at what it credited.
      paymentReversed: {
        id: reversal.id,
        kind: reversal.kind,
        final: reversal.final,
        note: reversal.note,
        accountId: payment.accountId,
        processor: STRIPE,
        paymentReference: payment.reference,
        paymentNano: payment.amountNano,
        totalNano,
        at: Date.now(),
      },
    });
    const movedNano = result.reversedNano ?? 0n;
    const balanceNano = result.balances.get(payment.accountId)?.balanceNano;
    if (movedNano !== 0n) {
      try {
        await this.onMoved(payment.accountId);
      } catch (error) {
        this.logger.warn(
          { err: error, accountId: payment.accountId },
          'a refund or dispute could not be announced to the caches; they pick it up within a second',
        );
      }
    }
    return { accountId: payment.accountId, movedNano, balanceNano };
  }

  /** A charge or dispute without the id, amount or status tollgate reads: logged, and nothing moves. */
  private unreadable(kind: 'charge' | 'dispute', id: unknown): undefined {
    this.logger.error({ objectId: id }, `a Stripe ${kind} lacks its id, amount or status; nothing debited`);
    return undefined;
  }

  /** The balance read from storage, when the ledger's answer had none (Stripe's own event applied the refund first). */
  private async balanceOf(accountId: string): Promise<Nano> {
    const account = await this.storage.accounts.get(accountId);
    if (!account) throw new GatewayError('not_found', { message: `No account ${accountId}`, param: 'id' });
    return account.balanceNano;
  }

  /** The purchase or recharge a charge paid, when it is one of ours and in USD. */
  private async paymentOf(
    paymentIntentId: string | undefined,
    currency: string,
    objectId: string,
  ): Promise<(PaidPayment & { reference: string }) | undefined> {
    const payment = paymentIntentId ? await this.storage.purchases.paymentOf(paymentIntentId) : undefined;
    if (!payment || !paymentIntentId || currency !== 'usd') {
      this.logger.error(
        { objectId, paymentIntentId },
        'a Stripe refund or dispute matches no paid purchase or recharge (payment or currency); nothing debited',
      );
      return undefined;
    }
    return { ...payment, reference: paymentIntentId };
  }
}
