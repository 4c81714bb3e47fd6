/** The Stripe SDK set up by the configuration: Stripe's own API, or another server speaking it (`STRIPE_API_BASE`). */
import Stripe from 'stripe';

/** A purchase request waits for Stripe: not the SDK's default 80 s. */
const TIMEOUT_MS = 15_000;

export function stripeClient(secretKey: string, apiBase?: string): Stripe {
  if (!apiBase) return new Stripe(secretKey, { timeout: TIMEOUT_MS });
  const base = new URL(apiBase);
  const protocol = base.protocol === 'http:' ? 'http' : 'https';
  return new Stripe(secretKey, {
    timeout: TIMEOUT_MS,
    host: base.hostname,
    port: base.port || (protocol === 'http' ? 80 : 443),
    protocol,
  });
}

/** Stripe charges in cents; tollgate counts nano-USD. */
export const NANO_PER_CENT = 10_000_000n;

/** A Stripe field's id, whether the field holds the id or (expanded) the object. */
export function idOf(value: string | { id: string } | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  return typeof value === 'string' ? value : value.id;
}

/** What a paid PaymentIntent's latest charge tells: Stripe's receipt link (null until it has one), and the card. */
export interface Receipt {
  receiptUrl: string | null;
  paymentMethodId: string | null;
}

export async function receiptOf(stripe: Stripe, paymentIntentId: string): Promise<Receipt> {
  const intent = await stripe.paymentIntents.retrieve(paymentIntentId, { expand: ['latest_charge'] });
  const charge = intent.latest_charge;
  return {
    receiptUrl: charge && typeof charge === 'object' ? charge.receipt_url : null,
    paymentMethodId: idOf(intent.payment_method),
  };
}
