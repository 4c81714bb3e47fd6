/**
 * What `tollgate usage` does (the command and its options are in program.ts): an account's usage export, the same
 * text as GET /v1/usage's in JSON or CSV (streamed), or a table of it.
 */
import type { UsageExport, UsageRequestRow } from '../api/index.js';
import { invalidRequest } from '../errors/index.js';
import { exportUsage, parseUsageQuery, type UsageFormat } from '../reports/index.js';
import { withContext } from './context.js';
import { money, print, printStream, printTable, type JsonOption } from './output.js';

export type UsageOutput = UsageFormat | 'table';

export interface UsageOptions extends JsonOption {
  account: string;
  from?: string;
  to?: string;
  groupBy?: string;
  format?: UsageOutput;
}

export function showUsage(options: UsageOptions): Promise<void> {
  return withContext(async (ctx) => {
    const output = outputOf(options);
    const query = parseUsageQuery({
      from: options.from,
      to: options.to,
      group_by: options.groupBy,
      format: output === 'table' ? 'json' : output,
    });
    const { account } = await ctx.admin.getAccount(options.account);
    const pieces = await exportUsage(ctx.storage, { accountId: account.id }, query);
    if (output !== 'table') return printStream(pieces);
    let text = '';
    for await (const piece of pieces) text += piece;
    printUsage(account.id, JSON.parse(text) as UsageExport);
  });
}

/** `--json` is `--format json`; with another `--format` it is a mistake. Default: a table. */
function outputOf(options: UsageOptions): UsageOutput {
  if (!options.json) return options.format ?? 'table';
  if (options.format && options.format !== 'json')
    throw invalidRequest(`--json and --format ${options.format} contradict each other`, 'format');
  return 'json';
}

function printUsage(accountId: string, usage: UsageExport): void {
  const per = usage.group_by ? `per ${usage.group_by}` : 'per request';
  print(`Usage of ${accountId} from ${usage.from} to ${usage.to} (UTC days), ${per}:`, '');
  if (!usage.group_by) {
    printTable(
      ['CREATED', 'REQUEST', 'MODEL', 'KEY', 'ENDPOINT', 'TOKENS', 'COST'],
      (usage.data as UsageRequestRow[]).map((r) => [
        `${r.created.slice(0, 19).replace('T', ' ')}Z`,
        r.request_id ?? r.ledger_entry_id,
        r.model ?? '-',
        r.key_name ?? r.key_id ?? '-',
        r.endpoint ?? '-',
        `${r.prompt_tokens}+${r.completion_tokens}`,
        money(BigInt(r.cost_nano)),
      ]),
    );
  } else {
    const by = usage.group_by;
    type Group = Record<string, string | number | null> & { cost_nano: string };
    const rows = usage.data as Group[];
    const label = (r: Group) =>
      by === 'key'
        ? [r.key_name, r.key_id === null ? null : `(${r.key_id})`].filter((v) => v !== null).join(' ') || '-'
        : String(r[by] ?? '-');
    printTable(
      [by.toUpperCase(), 'REQUESTS', 'PROMPT', 'COMPLETION', 'COST'],
      rows.map((r) => [
        label(r),
        String(r.requests),
        String(r.prompt_tokens),
        String(r.completion_tokens),
        money(BigInt(r.cost_nano)),
      ]),
    );
  }
  const { total } = usage;
  print(
    '',
    `Total: ${total.requests} requests, ${total.prompt_tokens} prompt + ${total.completion_tokens} completion tokens, ${money(BigInt(total.cost_nano))}`,
  );
}
