/**
 * What a signed webhook body must be before tollgate reads it. A valid signature proves who sent the bytes, not
 * what they hold: a body that is not a Stripe event (JSON `null`, no `data.object`) is a 400, and a field tollgate
 * reads from the event's object is checked where it is read (`cents`, `text`), so that a strange value is
 * logged and ignored instead of failing the request.
 */
import type Stripe from 'stripe';
import { invalidRequest } from '../errors/index.js';

/** Stripe's tolerance for a signature's timestamp, in seconds, applied in both directions. */
export const SIGNATURE_TOLERANCE_S = 300;

/**
 * Refuses a `Stripe-Signature` whose timestamp (`t=`) is further than the tolerance from this gateway's clock,
 * ahead or behind (Stripe's SDK checks only behind). A header without a readable timestamp is left to the SDK.
 */
export function checkSignatureTime(header: string, nowMs = Date.now()): void {
  const stamp = /(?:^|,)\s*t=(\d+)\s*(?:,|$)/.exec(header)?.[1];
  if (stamp === undefined) return;
  if (Math.abs(Math.floor(nowMs / 1000) - Number(stamp)) > SIGNATURE_TOLERANCE_S)
    throw invalidRequest(
      `The Stripe-Signature timestamp is more than ${SIGNATURE_TOLERANCE_S} seconds from this gateway's clock`,
      'Stripe-Signature',
    );
}

/** The parsed body as an event with an id, a type and an object, or a 400 saying what it lacks. */
export function eventOf(parsed: unknown): Stripe.Event {
  const id = isRecord(parsed) ? text(parsed.id) : undefined;
  if (!isRecord(parsed) || id === undefined || text(parsed.type) === undefined)
    throw invalidRequest('The signed body is not a Stripe event (an object with an id and a type)');
  if (!isRecord(parsed.data) || !isRecord(parsed.data.object))
    throw invalidRequest(`The signed Stripe event ${id} has no data.object`, 'data.object');
  return parsed as unknown as Stripe.Event;
}

/** A field read from an event's object as a whole non-negative number of cents, or undefined. */
export function cents(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

/** A field read from an event's object as non-empty text, or undefined. */
export function text(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
