/** USD amounts an operator or a user enters, in nano-USD, with the bounds every such amount keeps. */
import { invalidRequest } from '../errors/index.js';
import { enteredUsd, NANO_PER_USD, usdString, type Nano } from '../money/index.js';

/** Largest USD amount an operator may enter (1 billion USD): far below the 64-bit nano-USD columns' range. */
export const MAX_AMOUNT_NANO: Nano = 1_000_000_000n * 1_000_000_000n;
/** Largest balance an account may hold (so sums in 64-bit columns cannot overflow). */
export const MAX_BALANCE_NANO: Nano = 2n * MAX_AMOUNT_NANO;

export function usd(value: unknown, param: string, allowNegative = false): Nano {
  const nano = enteredUsd(
    value,
    (why) =>
      invalidRequest(
        why === 'not_exact' ? `${param} must be a USD amount with at most 9 decimals` : `${param} must be a USD amount`,
        param,
      ),
    { acceptText: true },
  );
  if (!allowNegative && nano < 0n) throw invalidRequest(`${param} must not be negative`, param);
  if (nano > MAX_AMOUNT_NANO || nano < -MAX_AMOUNT_NANO)
    throw invalidRequest(`${param} must be at most ${usdString(MAX_AMOUNT_NANO)} USD`, param);
  return nano;
}

const NANO_PER_CENT = NANO_PER_USD / 100n;

/** A USD amount that becomes a charge (a card's or an invoice's): whole cents, as the payment processor charges. */
export function centsUsd(value: unknown, param: string): Nano {
  const nano = usd(value, param);
  if (nano % NANO_PER_CENT !== 0n) throw invalidRequest(`${param} must be a USD amount in whole cents`, param);
  return nano;
}
