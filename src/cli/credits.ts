/** What `tollgate credits …` does (the commands and their options are in program.ts). */
import { operator } from '../admin/index.js';
import { renderLedgerEntry } from '../http/render.js';
import { usdNumber } from '../money/index.js';
import type { LedgerRecord } from '../storage/index.js';
import { withContext } from './context.js';
import { money, print, printJson, printTable, when, type JsonOption } from './output.js';

export interface AddCreditsOptions extends JsonOption {
  account: string;
  amount: string;
  note?: string;
}

export function addCredits(options: AddCreditsOptions): Promise<void> {
  return withContext(async (ctx) => {
    const { appliedNano, balanceNano } = await ctx.admin.addCredits(
      options.account,
      options.amount,
      options.note,
      operator(null, 'cli').actor,
    );
    if (options.json) {
      return printJson({
        object: 'credit_adjustment',
        account_id: options.account,
        amount: usdNumber(appliedNano),
        balance: { credits: usdNumber(balanceNano), currency: 'USD' },
      });
    }
    print(`Applied ${money(appliedNano)} to ${options.account}; balance is now ${money(balanceNano)}`);
  });
}

export interface ShowCreditsOptions extends JsonOption {
  account: string;
}

/** The balance and the newest `entries` ledger entries. */
export function showCredits(options: ShowCreditsOptions, entries: number): Promise<void> {
  return withContext(async (ctx) => {
    const { account } = await ctx.admin.getAccount(options.account);
    const ledger = await ctx.storage.ledger.list(account.id, { limit: entries });
    if (options.json) {
      return printJson({
        account_id: account.id,
        balance: { credits: usdNumber(account.balanceNano), currency: 'USD' },
        ledger: ledger.map(renderLedgerEntry),
      });
    }
    print(`Balance of ${account.id}: ${money(account.balanceNano)}`, '');
    printTable(
      ['WHEN', 'KIND', 'AMOUNT', 'BALANCE', 'DETAIL'],
      ledger.map((e) => [when(e.createdAt), e.kind, money(e.amountNano), money(e.balanceAfterNano), detail(e)]),
    );
  });
}

function detail(entry: LedgerRecord): string {
  if (entry.model) return `${entry.model} ${entry.promptTokens ?? 0}+${entry.completionTokens ?? 0} tokens`;
  return entry.note ?? '';
}
