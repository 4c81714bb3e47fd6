/**
 * Buying credit: a purchase row first (pending), then a Stripe Checkout Session for it (mode `payment`, the card
 * saved for later off-session charges, the purchase id in its metadata). The credit comes only from Stripe: its
 * signed confirmation (./stripe-events.ts), or the session as Stripe shows it when asked (./checkout-checks.ts).
 */
import type Stripe from 'stripe';
import type { Logger } from 'pino';
import type { Config } from '../config/index.js';
import { GatewayError, invalidRequest } from '../errors/index.js';
import { enteredUsd, parseUsd, usdString, type Nano } from '../money/index.js';
import { newId, type PurchaseRecord, type Storage } from '../storage/index.js';
import type { CheckoutChecks } from './checkout-checks.js';
import { NANO_PER_CENT } from './stripe-client.js';

export const STRIPE = 'stripe';

const NO_PROCESSOR =
  'Buying credit is not available on this gateway: it has no payment processor (STRIPE_SECRET_KEY is not set). The operator adds credit.';

export interface Buyer {
  id: string;
  email: string;
}

export class Purchases {
  /** The bounds of one purchase (payments.purchase.min_amount and max_amount). */
  readonly minNano: Nano;
  readonly maxNano: Nano;

  constructor(
    private readonly storage: Storage,
    config: Config,
    private readonly stripe: Stripe | undefined,
    private readonly logger: Logger,
    private readonly checks?: CheckoutChecks,
  ) {
    this.minNano = parseUsd(config.payments.purchase.min_amount);
    this.maxNano = parseUsd(config.payments.purchase.max_amount);
  }

  /** Whether users can buy credit on this gateway (a Stripe secret key is configured). */
  get enabled(): boolean {
    return this.stripe !== undefined;
  }

  /** Why users cannot buy credit here, or null when they can. */
  get unavailableReason(): string | null {
    return this.stripe ? null : NO_PROCESSOR;
  }

  /** `returnTo`: the dashboard's address, where Stripe sends the buyer back (it throws when there is none). */
  async create(buyer: Buyer, body: unknown, returnTo: () => string): Promise<PurchaseRecord> {
    if (!this.stripe) {
      throw invalidRequest(NO_PROCESSOR);
    }
    const base = returnTo();
    const amountNano = this.amountOf(body);
    const purchase = {
      id: newId('cp'),
      accountId: buyer.id,
      amountNano,
      currency: 'USD',
      processor: STRIPE,
      createdAt: Date.now(),
    };
    await this.storage.purchases.insert(purchase);
    let session: Stripe.Checkout.Session;
    try {
      session = await this.stripe.checkout.sessions.create(
        {
          mode: 'payment',
          customer: await this.customerOf(this.stripe, buyer),
          client_reference_id: purchase.id,
          metadata: { purchase_id: purchase.id, account_id: buyer.id },
          line_items: [
            {
              quantity: 1,
              price_data: {
                currency: 'usd',
                unit_amount: Number(amountNano / NANO_PER_CENT),
                product_data: { name: `Credit: ${usdString(amountNano)} USD` },
              },
            },
          ],
          payment_intent_data: { setup_future_usage: 'off_session', metadata: { purchase_id: purchase.id } },
          success_url: `${base}/dashboard/credits?purchase=${purchase.id}`,
          cancel_url: `${base}/dashboard/credits?purchase=${purchase.id}&canceled=1`,
        },
        { idempotencyKey: `checkout-${purchase.id}` },
      );
      if (!session.url) throw new Error(`checkout session ${session.id} has no url`);
    } catch (error) {
      this.logger.error(
        { err: error, purchaseId: purchase.id },
        'Stripe refused or failed to create a checkout session',
      );
      await this.storage.purchases.close(purchase.id, 'failed');
      throw new GatewayError('upstream_error', {
        message: 'The payment processor could not start the checkout; try again later',
      });
    }
    await this.storage.purchases.attachCheckout(purchase.id, session.id, session.url);
    return (await this.storage.purchases.get(purchase.id))!;
  }

  async list(accountId: string, page: { limit: number; before?: string }): Promise<PurchaseRecord[]> {
    return this.storage.purchases.list(accountId, page);
  }

  /**
   * Another account's purchase is answered like one that does not exist. A pending one is first asked of Stripe:
   * the buyer back from Checkout sees it paid even if Stripe's webhook is late.
   */
  async get(accountId: string, id: string): Promise<PurchaseRecord> {
    const purchase = await this.storage.purchases.get(id);
    if (!purchase || purchase.accountId !== accountId)
      throw new GatewayError('not_found', { message: `No credit purchase ${id}`, param: 'id' });
    return this.checks ? this.checks.check(purchase) : purchase;
  }

  private amountOf(body: unknown): Nano {
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw invalidRequest('The body must be a JSON object with amount (USD)', 'amount');
    const extra = Object.keys(body).find((k) => k !== 'amount');
    if (extra !== undefined) throw invalidRequest(`Unknown field ${extra}`, extra);
    const amount = 'amount' in body ? body.amount : undefined;
    const range = `from ${usdString(this.minNano)} to ${usdString(this.maxNano)} USD`;
    const nano = enteredUsd(amount, () => invalidRequest(`amount must be a USD amount ${range}`, 'amount'));
    if (nano % NANO_PER_CENT !== 0n) throw invalidRequest('amount must be in whole cents', 'amount');
    if (nano < this.minNano || nano > this.maxNano) throw invalidRequest(`amount must be ${range}`, 'amount');
    return nano;
  }

  /** The account's Stripe customer, created once and reused (auto-recharge charges its saved card off-session). */
  private async customerOf(stripe: Stripe, buyer: Buyer): Promise<string> {
    const known = await this.storage.purchases.customer(buyer.id);
    if (known) return known.customerId;
    const customer = await stripe.customers.create(
      { email: buyer.email, metadata: { account_id: buyer.id } },
      { idempotencyKey: `customer-${buyer.id}` },
    );
    return (await this.storage.purchases.saveCustomer(buyer.id, STRIPE, customer.id)).customerId;
  }
}
