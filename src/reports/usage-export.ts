/**
 * A usage export (GET /v1/usage, `tollgate usage`, the dashboard's "Download CSV"): the ledger's debits of a range,
 * one row per request or summed per group, as JSON or CSV text produced piece by piece. Requests are read a page
 * at a time, so a month of them streams in constant memory; the total is summed as it goes, in nano-USD.
 */
import { usdNumber, usdString } from '../billing/index.js';
import { plainJson } from '../money/index.js';
import type { ChargeCursor, ChargeGroup, ChargeRange, ChargeStore, LedgerRecord } from '../storage/index.js';
import { storedJson } from '../storage/index.js';
import type { UsageQuery } from './usage-query.js';

const PAGE = 1_000;

/** The export's rows as plain values: JSON writes them as they are, CSV in `CSV_COLUMNS` order. */
type Row = Record<string, string | number | boolean | null>;

const REQUEST_COLUMNS = [
  'created',
  'request_id',
  'answer_id',
  'ledger_entry_id',
  'key_id',
  'key_name',
  'model',
  'provider',
  'endpoint',
  'prompt_tokens',
  'completion_tokens',
  'cached_input_tokens',
  'cache_write_tokens',
  'reasoning_tokens',
  'finish_reason',
  'cost',
  'cost_nano',
] as const;

const GROUP_COLUMNS = ['requests', 'prompt_tokens', 'completion_tokens', 'cost', 'cost_nano'] as const;

export interface ExportSource {
  charges: ChargeStore;
  /** Names of the account's keys by id. */
  keyNames: ReadonlyMap<string, string>;
  /** Requests read per query (1,000 unless given). */
  pageSize?: number;
}

export function contentTypeOf(query: UsageQuery): string {
  return query.format === 'csv' ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8';
}

/** A file name for the export's download (`usage-2026-11-01-2026-11-30-day.csv`). */
export function fileNameOf(query: UsageQuery): string {
  return `usage-${query.from}-${query.to}${query.groupBy ? `-${query.groupBy}` : ''}.${query.format}`;
}

export async function* usageExport(
  source: ExportSource,
  range: ChargeRange,
  query: UsageQuery,
): AsyncGenerator<string, void, undefined> {
  const columns = query.groupBy ? [groupColumn(query), ...GROUP_COLUMNS] : [...REQUEST_COLUMNS];
  if (query.groupBy === 'key') columns.splice(1, 0, 'key_name');
  const total = { requests: 0, promptTokens: 0, completionTokens: 0, creditsNano: 0n };
  const csv = query.format === 'csv';
  yield csv
    ? csvLine(columns)
    : `{"object":"usage","from":"${query.from}","to":"${query.to}","group_by":${JSON.stringify(query.groupBy ?? null)},"data":[`;
  let first = true;
  for await (const batch of rowsOf(source, range, query, total)) {
    let text = '';
    for (const row of batch) {
      text += csv
        ? csvLine(columns.map((c) => csvValue(row, c)))
        : `${first ? '' : ','}${plainJson(JSON.stringify(row))}`;
      first = false;
    }
    if (text) yield text;
  }
  if (!csv) yield `],"total":${plainJson(JSON.stringify(groupValues(total)))}}\n`;
}

async function* rowsOf(
  source: ExportSource,
  range: ChargeRange,
  query: UsageQuery,
  total: { requests: number; promptTokens: number; completionTokens: number; creditsNano: bigint },
): AsyncGenerator<Row[], void, undefined> {
  const add = (requests: number, prompt: number, completion: number, nano: bigint) => {
    total.requests += requests;
    total.promptTokens += prompt;
    total.completionTokens += completion;
    total.creditsNano += nano;
  };
  if (query.groupBy) {
    const groups = await source.charges.grouped(range, query.groupBy);
    for (const g of groups) add(g.requests, g.promptTokens, g.completionTokens, g.creditsNano);
    yield groups.map((g) => groupRow(g, query, source.keyNames));
    return;
  }
  let after: ChargeCursor | undefined;
  const size = source.pageSize ?? PAGE;
  for (;;) {
    const page = await source.charges.page(range, size, after);
    for (const r of page) add(1, r.promptTokens ?? 0, r.completionTokens ?? 0, -r.amountNano);
    yield page.map((r) => requestRow(r, source.keyNames));
    if (page.length < size) return;
    const last = page[page.length - 1]!;
    after = { createdAt: last.createdAt, id: last.id };
  }
}

function groupColumn(query: UsageQuery): string {
  return query.groupBy === 'key' ? 'key_id' : query.groupBy!;
}

function groupRow(group: ChargeGroup, query: UsageQuery, keyNames: ReadonlyMap<string, string>): Row {
  const name = groupColumn(query);
  const value =
    query.groupBy === 'day'
      ? new Date(Number(group.group) * 86_400_000).toISOString().slice(0, 10)
      : (group.group as string | null);
  return {
    [name]: value,
    ...(query.groupBy === 'key' ? { key_name: value === null ? null : (keyNames.get(value) ?? null) } : {}),
    ...groupValues(group),
  };
}

function groupValues(g: { requests: number; promptTokens: number; completionTokens: number; creditsNano: bigint }) {
  return {
    requests: g.requests,
    prompt_tokens: g.promptTokens,
    completion_tokens: g.completionTokens,
    cost: usdNumber(g.creditsNano),
    cost_nano: String(g.creditsNano),
  };
}

function requestRow(r: LedgerRecord, keyNames: ReadonlyMap<string, string>): Row {
  const tokens = r.billing ? storedJson<{ tokens?: Record<string, number> }>(r.billing).tokens : undefined;
  const detail = r.detail ? storedJson<{ provider?: string; finish_reason?: string | null }>(r.detail) : undefined;
  const chargedNano = -r.amountNano;
  return {
    created: new Date(r.createdAt).toISOString(),
    request_id: r.requestId,
    answer_id: r.answerId,
    ledger_entry_id: r.id,
    key_id: r.keyId,
    key_name: r.keyId === null ? null : (keyNames.get(r.keyId) ?? null),
    model: r.model,
    provider: detail?.provider ?? null,
    endpoint: r.endpoint,
    prompt_tokens: r.promptTokens ?? 0,
    completion_tokens: r.completionTokens ?? 0,
    cached_input_tokens: tokens?.input_cache_read ?? null,
    cache_write_tokens: tokens ? (tokens.input_cache_write ?? 0) + (tokens.input_cache_write_1h ?? 0) : null,
    reasoning_tokens: tokens?.internal_reasoning ?? null,
    finish_reason: detail?.finish_reason ?? null,
    cost: usdNumber(chargedNano),
    cost_nano: String(chargedNano),
  };
}

/** One CSV record (RFC 4180). Text a spreadsheet would run as a formula (`=`, `+`, `-`, `@` first) gets a `'`. */
function csvLine(values: ReadonlyArray<string | number | boolean | null>): string {
  return `${values.map(csvField).join(',')}\r\n`;
}

function csvField(value: string | number | boolean | null): string {
  if (value === null) return '';
  if (typeof value !== 'string') return String(value);
  const text = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** A row's value in a CSV column: `cost` in exact decimal USD (JSON has it as a number, and `cost_nano` exact). */
function csvValue(row: Row, column: string): string | number | boolean | null {
  if (column === 'cost') return usdString(BigInt(row.cost_nano as string));
  return row[column] ?? null;
}
