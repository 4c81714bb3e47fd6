/** Printing: JSON for scripts, aligned columns for people. Everything goes to stdout. */
import { invalidRequest } from '../errors/index.js';
import { isExactUsd, plainJson, usdString, type Nano } from '../money/index.js';

/** `--json`: JSON instead of text. */
export interface JsonOption {
  json?: boolean;
}

/** Amounts in plain decimals (`0.0000002`, never `2e-7`), as the API writes them. */
export function printJson(value: unknown): void {
  process.stdout.write(`${plainJson(JSON.stringify(value, null, 2))}\n`);
}

/**
 * Text produced piece by piece (an export), written as it comes, waiting while stdout's buffer is full. A reader
 * that goes away (`| head`) ends the writing quietly, and with it the reading.
 */
export async function printStream(pieces: AsyncIterable<string>): Promise<void> {
  const out = process.stdout;
  let failure: NodeJS.ErrnoException | undefined;
  const onError = (error: NodeJS.ErrnoException) => (failure = error);
  out.on('error', onError);
  try {
    for await (const piece of pieces) {
      if (!out.write(piece))
        await new Promise<void>((resolve) => {
          const done = () => {
            out.off('drain', done);
            out.off('error', done);
            resolve();
          };
          out.once('drain', done);
          out.once('error', done);
        });
      if (failure) break;
    }
  } finally {
    out.off('error', onError);
  }
  if (failure && failure.code !== 'EPIPE') throw failure;
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
  return usd(usdString(nano));
}

/** An exact decimal USD string ("0.0000012", "-7.5", even to 1e-12) written like `money`: "$0.0000012", "-$7.50". */
export function usd(decimal: string): string {
  const [whole = '', fraction = ''] = decimal.split('.');
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
