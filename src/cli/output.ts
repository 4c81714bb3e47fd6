/** Printing: JSON for scripts, aligned columns for people. Everything goes to stdout. */
import { invalidRequest } from '../errors/index.js';
import { isExactUsd, usdString, type Nano } from '../money/index.js';

/** `--json`: JSON instead of text. */
export interface JsonOption {
  json?: boolean;
}

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function print(...lines: string[]): void {
  process.stdout.write(`${lines.join('\n')}\n`);
}

/** Rows under a header, each column padded to its widest cell. */
export function printTable(header: string[], rows: string[][]): void {
  if (!rows.length) return print('(none)');
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  print(line(header), ...rows.map(line));
}

/** Label/value pairs with the values aligned. */
export function printFields(fields: [string, string][]): void {
  const width = Math.max(...fields.map(([label]) => label.length));
  print(...fields.map(([label, value]) => `${`${label}:`.padEnd(width + 1)}  ${value}`));
}

/** "$7.50", "$0.000125": at least cents, never rounded. */
export function money(nano: Nano): string {
  const [whole = '', fraction = ''] = usdString(nano).split('.');
  return `${whole.startsWith('-') ? '-' : ''}$${whole.replace('-', '')}.${fraction.padEnd(2, '0')}`;
}

/** UTC, to the minute. */
export function when(ms: number | null): string {
  return ms === null ? '-' : `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')}Z`;
}

/** The number AdminService takes for a USD option, checked while still a decimal string so nothing is rounded. */
export function usdOption(value: string, param: string): number {
  if (!isExactUsd(value)) throw invalidRequest(`${param} must be a USD amount with at most 9 decimals`, param);
  return Number(value);
}
