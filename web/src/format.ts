/** Display formats: amounts arrive as USD numbers with at most 9 decimals; times as Unix seconds. */
import type { Permission } from './api.js';

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

/** An exact decimal USD amount (`1234.000012345`) as `$1,234.000012345`: every digit kept, at least two decimals. */
export function exactUsd(decimal: string): string {
  const negative = decimal.startsWith('-');
  const [whole = '0', fraction = ''] = decimal.replace(/^-/, '').split('.');
  return `${negative ? '-' : ''}$${BigInt(whole).toLocaleString('en-US')}.${fraction.padEnd(2, '0')}`;
}
/** nano-USD (an integer as a string, `"12345"`) as exact USD, `$0.000012345`. */
export function nanoUsd(nano: string): string {
  const value = BigInt(nano);
  const magnitude = value < 0n ? -value : value;
  const fraction = (magnitude % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '');
  return exactUsd(`${value < 0n ? '-' : ''}${magnitude / 1_000_000_000n}${fraction ? `.${fraction}` : ''}`);
}
export const milliseconds = (ms: number): string => `${countFormat.format(ms)} ms`;

export const PERMISSION_LABELS: Record<Permission, string> = {
  full: 'Full access',
  read_only: 'Read-only',
  project: 'Project',
  management: 'Management (keys only)',
};
