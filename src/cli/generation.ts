/**
 * What `tollgate generation` does (the command and its options are in program.ts): one request's charge explained,
 * as GET /v1/generation renders it, in JSON or as a summary with the breakdown's lines.
 */
import type { Generation } from '../api/index.js';
import { parseUsd } from '../money/index.js';
import { explainCharge } from '../reports/index.js';
import { withContext } from './context.js';
import { money, print, printFields, printJson, printTable, usd, type JsonOption } from './output.js';

export interface GenerationOptions extends JsonOption {
  account: string;
}

/** `id`: the answer's id, the request's x-request-id, or the ledger entry id. */
export function showGeneration(id: string, options: GenerationOptions): Promise<void> {
  return withContext(async (ctx) => {
    const { account } = await ctx.admin.getAccount(options.account);
    const generation = await explainCharge(ctx.storage, { accountId: account.id, accountName: account.id }, id);
    if (options.json) return printJson(generation);
    printGeneration(generation as Generation);
  });
}

function printGeneration(g: Generation): void {
  const or = (value: string | number | null) => (value === null ? '-' : String(value));
  const outcome = [
    g.finish_reason ?? 'no finish reason',
    g.streamed === null ? null : g.streamed ? 'streamed' : 'not streamed',
    g.cancelled ? 'cancelled by the client' : null,
  ].filter((part) => part !== null);
  const t = g.tokens;
  const kinds = (
    [
      ['cached input', t.cached_input],
      ['cache write', t.cache_write],
      ['cache write 1h', t.cache_write_1h],
      ['reasoning', t.reasoning],
      ['images', t.images],
      ['web searches', t.web_searches],
    ] as const
  )
    .filter(([, n]) => n !== null && n > 0)
    .map(([kind, n]) => `${n} ${kind}`);
  printFields([
    ['Request', or(g.id)],
    ['Answer id', or(g.answer_id)],
    ['Created', `${new Date(g.created * 1000).toISOString().slice(0, 19).replace('T', ' ')}Z`],
    ['Model', or(g.model)],
    ['Provider', or(g.provider)],
    ['Endpoint', or(g.endpoint)],
    ['Key', g.key.id === null ? '-' : `${g.key.name ?? ''} (${g.key.id})`.trimStart()],
    ['Outcome', outcome.join(', ')],
    [
      'Latency',
      g.latency_ms === null
        ? '-'
        : `${g.latency_ms} ms${g.time_to_first_token_ms === null ? '' : ` (first token ${g.time_to_first_token_ms} ms)`}`,
    ],
    [
      'Tokens',
      `${t.prompt} prompt + ${t.completion} completion = ${t.total}${kinds.length ? ` (${kinds.join(', ')})` : ''}`,
    ],
    ['Cost', money(BigInt(g.cost_nano))],
    ['Ledger entry', `${g.ledger_entry.id} (balance after ${money(parseUsd(g.ledger_entry.balance_after))})`],
  ]);
  const b = g.breakdown;
  if (!b) return print('', 'No price breakdown is recorded for this request.');
  print('', 'Breakdown:', '');
  printTable(
    ['KIND', 'QUANTITY', 'PRICE', 'COST'],
    b.lines.map((line) =>
      'price_per_million' in line
        ? [
            line.kind,
            `${line.quantity} ${line.quantity === 1 ? 'token' : 'tokens'}`,
            `${money(parseUsd(line.price_per_million))} per 1M tokens`,
            usd(line.cost),
          ]
        : [line.kind, String(line.quantity), `${money(parseUsd(line.price))} each`, usd(line.cost)],
    ),
  );
  const notes = [
    b.tier_above_prompt_tokens === null ? '' : `long-context tier (prompts above ${b.tier_above_prompt_tokens} tokens)`,
    b.service_tier === null ? '' : `service tier ${b.service_tier}`,
  ].filter(Boolean);
  const priced = BigInt(b.priced_nano);
  const charged = BigInt(b.charged_nano);
  print(
    '',
    `Priced ${money(priced)}${notes.length ? ` at the ${notes.join(' and ')} prices` : ''}; charged ${money(charged)}` +
      (charged < priced ? ' (capped by the hold or a limit)' : '') +
      '.',
  );
}
