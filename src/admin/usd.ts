/** USD amounts an operator or a user enters, as nano-USD, with the bounds every such amount keeps. */
import { parseUsd, usdString, type Nano } from '../billing/index.js';
import { invalidRequest } from '../errors/index.js';

/** Largest USD amount an operator may enter (1 billion USD): far below the 64-bit nano-USD columns' range. */
export const MAX_AMOUNT_NANO: Nano = 1_000_000_000n * 1_000_000_000n;
/** Largest balance an account may hold (so sums in 64-bit columns cannot overflow). */
export const MAX_BALANCE_NANO: Nano = 2n * MAX_AMOUNT_NANO;

export function usd(value: unknown, param: string, allowNegative = false): Nano {
  if (typeof value !== 'number' && typeof value !== 'string')
    throw invalidRequest(`${param} must be a USD amount`, param);
  let nano: Nano;
  try {
    nano = parseUsd(value);
  } catch {
    throw invalidRequest(`${param} must be a USD amount with at most 9 decimals`, param);
  }
  if (!allowNegative && nano < 0n) throw invalidRequest(`${param} must not be negative`, param);
  if (nano > MAX_AMOUNT_NANO || nano < -MAX_AMOUNT_NANO)
    throw invalidRequest(`${param} must be at most ${usdString(MAX_AMOUNT_NANO)} USD`, param);
  return nano;
}
