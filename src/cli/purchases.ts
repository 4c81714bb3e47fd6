import { Command } from 'commander';
import { invalidRequest } from '../errors/index.js';
import { renderPurchase } from '../http/routes/purchases.js';
import { withContext } from './context.js';
import { money, print, printJson, printTable, when } from './output.js';

export function purchasesCommand(): Command {
  const purchases = new Command('purchases').description("Show an account's credit purchases (Stripe Checkout)");

  purchases
    .command('list')
    .description("List an account's purchases, newest first")
    .requiredOption('--account <id>', 'account id')
    .option('--limit <n>', 'how many', '20')
    .option('--json', 'print JSON (the admin API shape)')
    .action((options: { account: string; limit: string; json?: boolean }) =>
      withContext(async (ctx) => {
        const limit = Number(options.limit);
        if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw invalidRequest('limit must be 1 to 500', 'limit');
        const { account } = await ctx.admin.getAccount(options.account);
        const items = await ctx.storage.purchases.list(account.id, { limit });
        if (options.json) return printJson({ object: 'list', data: items.map(renderPurchase), has_more: items.length === limit });
        print(`Purchases of ${account.id}:`, '');
        printTable(
          ['ID', 'CREATED', 'AMOUNT', 'STATUS', 'PAID', 'STRIPE PAYMENT', 'RECEIPT'],
          items.map((p) => [p.id, when(p.createdAt), money(p.amountNano), p.status, when(p.paidAt), p.paymentIntentId ?? p.checkoutSessionId ?? '-', p.receiptUrl ?? '-']),
        );
      }),
    );

  return purchases;
}
