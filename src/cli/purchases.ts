import { Command } from 'commander';
import pino from 'pino';
import { usd } from '../admin/index.js';
import { invalidRequest } from '../errors/index.js';
import { renderPurchase, renderRefund } from '../http/routes/purchases.js';
import { Reversals, stripeClient } from '../payments/index.js';
import { withContext } from './context.js';
import { money, print, printJson, printTable, when } from './output.js';

export function purchasesCommand(): Command {
  const purchases = new Command('purchases').description(
    "Show an account's credit purchases (Stripe Checkout) and refund one",
  );

  purchases
    .command('list')
    .description("List an account's purchases, newest first")
    .requiredOption('--account <id>', 'account id')
    .option('--limit <n>', 'how many', '20')
    .option('--json', 'print JSON (the admin API shape)')
    .action((options: { account: string; limit: string; json?: boolean }) =>
      withContext(async (ctx) => {
        const limit = Number(options.limit);
        if (!Number.isInteger(limit) || limit < 1 || limit > 500)
          throw invalidRequest('limit must be 1 to 500', 'limit');
        const { account } = await ctx.admin.getAccount(options.account);
        const items = await ctx.storage.purchases.list(account.id, { limit });
        if (options.json)
          return printJson({ object: 'list', data: items.map(renderPurchase), has_more: items.length === limit });
        print(`Purchases of ${account.id}:`, '');
        printTable(
          ['ID', 'CREATED', 'AMOUNT', 'STATUS', 'PAID', 'STRIPE PAYMENT', 'RECEIPT'],
          items.map((p) => [
            p.id,
            when(p.createdAt),
            money(p.amountNano),
            p.status,
            when(p.paidAt),
            p.paymentIntentId ?? p.checkoutSessionId ?? '-',
            p.receiptUrl ?? '-',
          ]),
        );
      }),
    );

  purchases
    .command('refund <purchase>')
    .description(
      'Refund a paid purchase through Stripe and debit it from the balance (default: all that is left of it)',
    )
    .requiredOption('--account <id>', 'account id')
    .option('--amount <usd>', 'USD to refund (default: what is left of the purchase)')
    .option('--json', 'print JSON (the admin API shape)')
    .action((purchase: string, options: { account: string; amount?: string; json?: boolean }) =>
      withContext(async (ctx) => {
        const { secret_key, api_base } = ctx.config.payments.stripe;
        if (!secret_key) throw invalidRequest('Refunds go through Stripe, and STRIPE_SECRET_KEY is not set');
        await ctx.admin.getAccount(options.account);
        const amount = options.amount === undefined ? undefined : usd(options.amount, 'amount');
        // Running gateways reload the balance within a second.
        const reversals = new Reversals(
          ctx.storage,
          stripeClient(secret_key, api_base),
          pino({ level: 'warn' }),
          () => {},
        );
        const refunded = await reversals.refund(options.account, purchase, amount);
        const { account } = await ctx.admin.getAccount(options.account);
        if (options.json) return printJson(renderRefund(refunded, account.balanceNano));
        print(
          `Refunded ${money(refunded.refundedNano)} of ${purchase} in all (Stripe refund ${refunded.refundId}, ${refunded.status ?? 'unknown'}).`,
        );
        print(`Debited now: ${money(refunded.debitedNano)}. Balance: ${money(account.balanceNano)}.`);
      }),
    );

  return purchases;
}
