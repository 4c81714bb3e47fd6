/** What `tollgate purchases refund` does (the command and its options are in program.ts); only it needs Stripe. */
import pino from 'pino';
import { operator, usd } from '../admin/index.js';
import { invalidRequest } from '../errors/index.js';
import { renderRefund } from '../http/routes/purchases.js';
import { Reversals, stripeClient } from '../payments/index.js';
import { withContext } from './context.js';
import { money, print, printJson, type JsonOption } from './output.js';

export interface RefundPurchaseOptions extends JsonOption {
  account: string;
  amount?: string;
}

export function refundPurchase(purchase: string, options: RefundPurchaseOptions): Promise<void> {
  return withContext(async (ctx) => {
    const { secret_key, api_base } = ctx.config.payments.stripe;
    if (!secret_key) throw invalidRequest('Refunds go through Stripe, and STRIPE_SECRET_KEY is not set');
    await ctx.admin.getAccount(options.account);
    const amount = options.amount === undefined ? undefined : usd(options.amount, 'amount');
    // Running gateways reload the balance within a second.
    const reversals = new Reversals(ctx.storage, stripeClient(secret_key, api_base), pino({ level: 'warn' }), () => {});
    const refunded = await reversals.refund(options.account, purchase, amount, operator(null, 'cli').actor);
    const { account } = await ctx.admin.getAccount(options.account);
    if (options.json) return printJson(renderRefund(refunded, account.balanceNano));
    print(
      `Refunded ${money(refunded.refundedNano)} of ${purchase} in all (Stripe refund ${refunded.refundId}, ${refunded.status ?? 'unknown'}).`,
    );
    print(`Debited now: ${money(refunded.debitedNano)}. Balance: ${money(account.balanceNano)}.`);
  });
}
