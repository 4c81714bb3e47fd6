/**
 * Money is an integer count of nano-USD (1e-9 USD) held in a bigint. Decimal USD enters only through
 * `parseUsd` (exact string arithmetic, never float multiplication) and leaves only through `usdNumber` (or
 * `usdString`); JSON answers pass through `plainJson`, so that a small amount is never written `2e-7`.
 */
export type Nano = bigint;

export const NANO_PER_USD = 1_000_000_000n;
const MAX_DECIMALS = 9;

/** Parses a decimal USD amount ("5", "0.15", 2.5, "1e-6") into nano-USD; throws on anything not exact to 1e-9. */
export function parseUsd(value: number | string): Nano {
  const text = typeof value === 'number' ? numberToPlainString(value) : value.trim();
  const match = /^(-)?(\d+)(?:\.(\d+))?$/.exec(text);
  if (!match) throw new RangeError(`not a decimal USD amount: ${String(value)}`);
  const [, sign, whole, fraction = ''] = match;
  const trimmed = fraction.replace(/0+$/, '');
  if (trimmed.length > MAX_DECIMALS) throw new RangeError(`more than ${MAX_DECIMALS} decimals: ${String(value)}`);
  const nano = BigInt(whole!) * NANO_PER_USD + BigInt(trimmed.padEnd(MAX_DECIMALS, '0') || '0');
  return sign ? -nano : nano;
}

/** True when `value` is a USD amount representable exactly in nano-USD. */
export function isExactUsd(value: number | string): boolean {
  try {
    parseUsd(value);
    return true;
  } catch {
    return false;
  }
}

/** Why `enteredUsd` refused a value: not a number (nor text, where text is accepted), or not exact to 1e-9. */
export type UsdRefusal = 'not_an_amount' | 'not_exact';

/**
 * A USD amount someone entered (a JSON number, or also its text with `acceptText`) in nano-USD. A value that is
 * not one throws `refuse(why)`, so that each caller keeps its own messages; bounds are the caller's to check.
 */
export function enteredUsd(
  value: unknown,
  refuse: (why: UsdRefusal) => Error,
  { acceptText = false }: { acceptText?: boolean } = {},
): Nano {
  if (typeof value !== 'number' && typeof value !== 'string') throw refuse('not_an_amount');
  if (typeof value === 'string' && !acceptText) throw refuse('not_an_amount');
  try {
    return parseUsd(value);
  } catch {
    throw refuse('not_exact');
  }
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * The JSON number for nano-USD, with at most 9 decimals: the double nearest the exact decimal. Below 2^53
 * nano-USD both the integer and 1e9 are exact doubles and IEEE division rounds correctly, so n / 1e9 is that
 * same double, without building the decimal string (this runs several times per request).
 */
export function usdNumber(nano: Nano): number {
  if (nano <= MAX_SAFE && nano >= -MAX_SAFE) return Number(nano) / 1e9;
  return Number(usdString(nano));
}

export function usdString(nano: Nano): string {
  const negative = nano < 0n;
  const abs = negative ? -nano : nano;
  const whole = abs / NANO_PER_USD;
  const fraction = (abs % NANO_PER_USD).toString().padStart(MAX_DECIMALS, '0').replace(/0+$/, '');
  return `${negative ? '-' : ''}${whole}${fraction ? `.${fraction}` : ''}`;
}

// JSON.stringify writes numbers below 1e-6 (and from 1e21) in exponent form: a digit, `e`, then a sign.
const EXPONENT_FORM = /\de[-+]/;
// Whole JSON strings first, so that their contents are skipped; then numbers in exponent form.
const JSON_TOKENS = /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?e[-+]\d+/g;

/**
 * JSON text (or SSE `data:` lines) with every number in exponent form rewritten in plain decimal form, so that USD
 * amounts read `0.0000002`, never `2e-7` (a nano-USD amount has at most 9 decimals). Text without such a
 * number, the usual case, comes back unchanged after one quick scan.
 */
export function plainJson(json: string): string {
  if (!EXPONENT_FORM.test(json)) return json;
  return json.replace(JSON_TOKENS, (token) =>
    token.charCodeAt(0) === 34 ? token : numberToPlainString(Number(token)),
  );
}

/** A JS number written in decimal without exponent, so "1e-7" becomes "0.0000001". */
function numberToPlainString(value: number): string {
  if (!Number.isFinite(value)) throw new RangeError(`not a finite number: ${value}`);
  const text = String(value);
  if (!/e/i.test(text)) return text;
  const [mantissa = '', exponentText] = text.toLowerCase().split('e');
  const exponent = Number(exponentText);
  const negative = mantissa.startsWith('-');
  const digits = mantissa.replace('-', '');
  const [intPart = '', fracPart = ''] = digits.split('.');
  const all = intPart + fracPart;
  const point = intPart.length + exponent;
  let result: string;
  if (point <= 0) result = `0.${'0'.repeat(-point)}${all}`;
  else if (point >= all.length) result = all + '0'.repeat(point - all.length);
  else result = `${all.slice(0, point)}.${all.slice(point)}`;
  return (negative ? '-' : '') + result;
}
