/** The Stripe SDK as the configuration sets it up: Stripe's own API, or another server speaking it (`STRIPE_API_BASE`). */
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
