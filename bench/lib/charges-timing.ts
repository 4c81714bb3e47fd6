/**
 * Times ChargeStore's reads through `storage.charges` (openStorage, no mock): each grouping over a month and over
 * the year, a month's export page by page, and `find` by request id and by answer id.
 */
import type { ChargeGrouping, ChargeRange, ChargeStore } from '../../src/storage/index.js';

export const EXPORT_PAGE_ROWS = 1_000;
const GROUPED_RUNS = 3;
const GROUPINGS: ChargeGrouping[] = ['day', 'model', 'key', 'endpoint'];

export interface TimingRow {
  operation: string;
  range: string;
  result: string;
  /** Milliseconds of each run. */
  runsMs: number[];
  note?: string;
}

export interface ExportResult {
  rows: number;
  pages: number;
  amountNano: bigint;
  ms: number;
  /** Highest RSS seen after a page minus the RSS before the first: over the first EARLY_PAGES pages, and over all. */
  earlyPeakRssDeltaMb: number;
  peakRssDeltaMb: number;
  /** V8 heap in use after a full GC, after the last page minus before the first (when node runs with --expose-gc). */
  retainedHeapMb?: number;
}

/** Memory is flat when the peak over the whole export is about the peak over its first pages. */
const EARLY_PAGES = 25;
const MB = 1024 * 1024;

export async function timeGrouped(
  charges: ChargeStore,
  ranges: Record<string, ChargeRange>,
): Promise<{ rows: TimingRow[]; requests: Record<string, number> }> {
  const rows: TimingRow[] = [];
  const requests: Record<string, number> = {};
  for (const [rangeName, range] of Object.entries(ranges))
    for (const by of GROUPINGS) {
      const runsMs: number[] = [];
      let groups = 0;
      for (let run = 0; run < GROUPED_RUNS; run++) {
        const start = performance.now();
        const result = await charges.grouped(range, by);
        runsMs.push(performance.now() - start);
        groups = result.length;
        requests[rangeName] = result.reduce((sum, group) => sum + group.requests, 0);
      }
      rows.push({ operation: `grouped by ${by}`, range: rangeName, result: `${groups} groups`, runsMs });
    }
  return { rows, requests };
}

/** Every debit of the range through `page()`, `EXPORT_PAGE_ROWS` at a time, kept no longer than its page. */
export async function exportRange(charges: ChargeStore, range: ChargeRange): Promise<ExportResult> {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  const rssBefore = process.memoryUsage.rss();
  let peakRss = rssBefore;
  let earlyPeakRss = rssBefore;
  let rows = 0;
  let pages = 0;
  let amountNano = 0n;
  const start = performance.now();
  let page = await charges.page(range, EXPORT_PAGE_ROWS);
  while (page.length) {
    pages++;
    rows += page.length;
    for (const charge of page) amountNano += charge.amountNano;
    peakRss = Math.max(peakRss, process.memoryUsage.rss());
    if (pages <= EARLY_PAGES) earlyPeakRss = peakRss;
    const last = page.at(-1)!;
    if (page.length < EXPORT_PAGE_ROWS) break;
    page = await charges.page(range, EXPORT_PAGE_ROWS, { createdAt: last.createdAt, id: last.id });
  }
  const ms = performance.now() - start;
  gc?.();
  return {
    rows,
    pages,
    amountNano,
    ms,
    earlyPeakRssDeltaMb: (earlyPeakRss - rssBefore) / MB,
    peakRssDeltaMb: (peakRss - rssBefore) / MB,
    ...(gc ? { retainedHeapMb: (process.memoryUsage().heapUsed - heapBefore) / MB } : {}),
  };
}

/** Each id looked up once; each must be found. Milliseconds per lookup, in order. */
export async function timeFind(charges: ChargeStore, accountId: string, ids: string[]): Promise<number[]> {
  const runsMs: number[] = [];
  for (const id of ids) {
    const start = performance.now();
    const found = await charges.find(accountId, id);
    runsMs.push(performance.now() - start);
    if (!found || ![found.requestId, found.answerId, found.id].includes(id))
      throw new Error(`find(${accountId}, ${id}) found nothing`);
  }
  return runsMs;
}

export function median(values: number[]): number {
  return quantile(values, 0.5);
}

export function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}
