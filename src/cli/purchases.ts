/** What `tollgate purchases list` does (the command and its options are in program.ts). */
import { invalidRequest } from '../errors/index.js';
import { renderPurchase } from '../http/routes/purchases.js';
import { withContext } from './context.js';
import { money, print, printJson, printTable, when, type JsonOption } from './output.js';

export interface ListPurchasesOptions extends JsonOption {
  account: string;
  limit: string;
}

export function listPurchases(options: ListPurchasesOptions): Promise<void> {
  return withContext(async (ctx) => {
    const limit = Number(options.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 500) throw invalidRequest('limit must be 1 to 500', 'limit');
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
  });
}
