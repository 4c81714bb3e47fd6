/** `tollgate doctor`'s Stripe key check: the key's mode, where it goes and whether Stripe accepts it. */
import Stripe from 'stripe';
import { messageOf } from '../errors/index.js';
import { stripeClient } from '../payments/index.js';
import type { Check } from './doctor-check.js';

const STRIPE_TIMEOUT_MS = 5_000;
/**
 * Stripe's check asks for a PaymentIntent that does not exist: the answer `resource_missing` (404) says the key was
 * accepted, with no more access than the gateway's own use needs (a restricted key may lack balance or list reads).
 */
const PROBE_PAYMENT_INTENT = 'pi_tollgate_doctor_probe';

export async function stripeKeyCheck(key: string, apiBase: string | undefined): Promise<Check> {
  const check = 'stripe';
  const prefix = /^[sr]k_(live|test)_/.exec(key);
  const mode = prefix?.[1];
  const elsewhere = apiBase !== undefined && new URL(apiBase).hostname !== 'api.stripe.com';
  const where = elsewhere ? apiBase.replace(/\/$/, '') : 'Stripe';
  if (mode === 'live' && elsewhere) {
    return {
      check,
      outcome: 'warn',
      detail: `a live key (${prefix?.[0]}…) with STRIPE_API_BASE=${where}, which is not Stripe: real payments go through Stripe's own API (unset STRIPE_API_BASE). Not probed, so doctor did not send the key there`,
    };
  }
  const started = Date.now();
  try {
    await stripeClient(key, apiBase).paymentIntents.retrieve(
      PROBE_PAYMENT_INTENT,
      {},
      { timeout: STRIPE_TIMEOUT_MS, maxNetworkRetries: 0 },
    );
  } catch (error) {
    const missing = error instanceof Stripe.errors.StripeInvalidRequestError && error.statusCode === 404;
    if (!missing) return { check, outcome: 'fail', detail: `${where}: ${stripeProblem(error, key)}` };
  }
  const accepted = `${where} accepted the key (${Date.now() - started} ms)`;
  if (mode === 'live') return { check, outcome: 'ok', detail: `live mode: ${accepted}` };
  if (mode === 'test')
    return {
      check,
      outcome: 'warn',
      detail: `test mode (${prefix?.[0]}…): ${accepted}; purchases are paid with Stripe's test cards and no money moves. A live deployment needs a live key (sk_live_…)`,
    };
  return {
    check,
    outcome: 'warn',
    detail: `${accepted}, but STRIPE_SECRET_KEY does not look like a Stripe secret key (sk_live_… or sk_test_…)`,
  };
}

/** Why Stripe's check failed, without the key (Stripe's own messages may quote part of it). */
function stripeProblem(error: unknown, key: string): string {
  if (error instanceof Stripe.errors.StripeAuthenticationError)
    return `the key was refused (HTTP ${error.statusCode ?? 401}): check STRIPE_SECRET_KEY`;
  if (error instanceof Stripe.errors.StripePermissionError) {
    return `the key may not read PaymentIntents (HTTP ${error.statusCode ?? 403}): a restricted key needs write access to Checkout Sessions, Customers and PaymentIntents`;
  }
  if (error instanceof Stripe.errors.StripeConnectionError) {
    if (/timeout/i.test(error.message)) return `no answer within ${STRIPE_TIMEOUT_MS / 1000} s`;
    // The network error underneath (ECONNREFUSED and the like) says more than Stripe's generic message.
    const { detail } = error;
    return `unreachable: ${withoutKey(detail instanceof Error ? detail.message : error.message, key)}`;
  }
  if (error instanceof Stripe.errors.StripeError)
    return `answered${error.statusCode ? ` HTTP ${error.statusCode}` : ''}: ${withoutKey(error.message, key)}`;
  return withoutKey(messageOf(error), key);
}

function withoutKey(text: string, key: string): string {
  const masked = key.length >= 8 ? text.split(key).join('[key]') : text;
  return masked.replace(/\b[sr]k_(live|test)_[A-Za-z0-9*]+/g, '[key]');
}
