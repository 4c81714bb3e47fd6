import { Command } from 'commander';
import { usdNumber } from '../billing/index.js';
import { renderLedgerEntry } from '../http/render.js';
import type { LedgerRecord } from '../storage/index.js';
import { withContext } from './context.js';
import { money, print, printJson, printTable, when } from './output.js';

const LEDGER_ENTRIES = 20;

export function creditsCommand(): Command {
  const credits = new Command('credits').description('Add credits to an account and show its ledger');

  credits
    .command('add')
    .description('Top up an account; a negative amount is a correction (never below a zero balance)')
    .requiredOption('--account <id>', 'account id')
    .requiredOption('--amount <usd>', 'USD amount, at most 9 decimals (negative for a correction)')
    .option('--note <text>', 'a note stored on the ledger entry')
    .option('--json', 'print JSON (the admin API shape)')
    .action((options: { account: string; amount: string; note?: string; json?: boolean }) =>
      withContext(async (ctx) => {
        const { appliedNano, balanceNano } = await ctx.admin.addCredits(options.account, options.amount, options.note);
        if (options.json) {
          return printJson({
            object: 'credit_adjustment',
            account_id: options.account,
            amount: usdNumber(appliedNano),
            balance: { credits: usdNumber(balanceNano), currency: 'USD' },
          });
        }
        print(`Applied ${money(appliedNano)} to ${options.account}; balance is now ${money(balanceNano)}`);
      }),
    );

  credits
    .command('show')
    .description(`Show an account's balance and its last ${LEDGER_ENTRIES} ledger entries`)
    .requiredOption('--account <id>', 'account id')
    .option('--json', 'print JSON')
    .action((options: { account: string; json?: boolean }) =>
      withContext(async (ctx) => {
        const { account } = await ctx.admin.getAccount(options.account);
        const entries = await ctx.storage.ledger.list(account.id, { limit: LEDGER_ENTRIES });
        if (options.json) {
          return printJson({
            account_id: account.id,
            balance: { credits: usdNumber(account.balanceNano), currency: 'USD' },
            ledger: entries.map(renderLedgerEntry),
          });
        }
        print(`Balance of ${account.id}: ${money(account.balanceNano)}`, '');
        printTable(
          ['WHEN', 'KIND', 'AMOUNT', 'BALANCE', 'DETAIL'],
          entries.map((e) => [when(e.createdAt), e.kind, money(e.amountNano), money(e.balanceAfterNano), detail(e)]),
        );
      }),
    );

  return credits;
}

function detail(entry: LedgerRecord): string {
  if (entry.model) return `${entry.model} ${entry.promptTokens ?? 0}+${entry.completionTokens ?? 0} tokens`;
  return entry.note ?? '';
}
