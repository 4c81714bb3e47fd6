/** Display formats: amounts arrive as USD numbers with at most 9 decimals; times as Unix seconds. */
const usdFormat = new Intl.NumberFormat('en-US', {
  style: 'currency',
  currency: 'USD',
  minimumFractionDigits: 2,
  maximumFractionDigits: 9,
});
const countFormat = new Intl.NumberFormat('en-US');
const dateFormat = new Intl.DateTimeFormat('en-US', { dateStyle: 'medium', timeZone: 'UTC' });
const dateTimeFormat = new Intl.DateTimeFormat('en-US', { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' });

export const usd = (amount: number): string => usdFormat.format(amount);
/** Prices per 1K tokens can be tiny: keep every significant digit. */
export const price = (amount: number): string => `$${amount.toLocaleString('en-US', { maximumFractionDigits: 9 })}`;
export const count = (n: number): string => countFormat.format(n);
/** `1 request`, `2 requests`. */
export const plural = (n: number, noun: string): string => `${countFormat.format(n)} ${noun}${n === 1 ? '' : 's'}`;
export const date = (seconds: number | null): string =>
  seconds === null ? 'Never' : dateFormat.format(seconds * 1000);
export const dateTime = (seconds: number | null): string =>
  seconds === null ? 'Never' : `${dateTimeFormat.format(seconds * 1000)} UTC`;
export const isoDate = (iso: string): string => dateFormat.format(new Date(iso));
export const orDash = (value: number | null, render: (v: number) => string): string =>
  value === null ? '–' : render(value);

export const PERMISSION_LABELS: Record<string, string> = {
  full: 'Full access',
  read_only: 'Read-only',
  project: 'Project',
};
