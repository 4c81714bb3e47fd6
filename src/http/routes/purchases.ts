/** `/v1/credits/purchases` (full keys: buying credit through Stripe Checkout) and Stripe's `POST /webhooks/stripe`. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { publicBase, publicBaseMissing, type Config } from '../../config/index.js';
import { GatewayError, invalidRequest } from '../../errors/index.js';
import { usdNumber } from '../../money/index.js';
import type { Payments, Refunded } from '../../payments/index.js';
import type { PurchaseRecord } from '../../storage/index.js';
import { parsePage } from '../../webhooks/index.js';
import { admitRead } from '../admit-read.js';
import type { HttpDeps } from '../deps.js';
import { IdParams, PageQuery, typed } from './typed.js';

const seconds = (ms: number | null) => (ms === null ? null : Math.floor(ms / 1000));

export function renderPurchase(purchase: PurchaseRecord): Record<string, unknown> {
  return {
    id: purchase.id,
    object: 'credit_purchase',
    amount: usdNumber(purchase.amountNano),
    currency: purchase.currency,
    status: purchase.status,
    checkout_url: purchase.checkoutUrl,
    receipt_url: purchase.receiptUrl,
    created: seconds(purchase.createdAt),
    paid_at: seconds(purchase.paidAt),
  };
}

/** An operator's refund of a purchase: Stripe's refund, what the ledger debited, and the balance after. */
export function renderRefund(refunded: Refunded, balanceNano: bigint): Record<string, unknown> {
  return {
    id: refunded.refundId,
    object: 'credit_refund',
    status: refunded.status,
    account_id: refunded.accountId,
    purchase_id: refunded.purchaseId,
    amount_refunded: usdNumber(refunded.refundedNano),
    debited: usdNumber(refunded.debitedNano),
    balance: { credits: usdNumber(balanceNano), currency: 'USD' },
  };
}

/** Where Stripe sends the buyer back (config/public-url.ts); a host that may not be used refuses the purchase. */
export function checkoutReturnUrl(config: Config, request: FastifyRequest): string {
  const base = publicBase(config.server, request);
  if (!base) throw invalidRequest(publicBaseMissing('Buying credit', request));
  return base;
}

export function purchaseRoutes(app: FastifyInstance, deps: HttpDeps, payments: Payments): void {
  const server = typed(app);

  server.post('/v1/credits/purchases', async (request, reply) => {
    const key = await admitRead(deps, request, reply, 'manage');
    const account = await deps.storage.accounts.get(key.accountId);
    if (!account) throw new GatewayError('invalid_api_key');
    const purchase = await payments.purchases.create({ id: account.id, email: account.email }, request.body, () =>
      checkoutReturnUrl(deps.config, request),
    );
    return reply.code(201).send(renderPurchase(purchase));
  });

  server.get('/v1/credits/purchases', { schema: { querystring: PageQuery } }, async (request, reply) => {
    const key = await admitRead(deps, request, reply, 'manage');
    const page = parsePage(request.query, false);
    const items = await payments.purchases.list(key.accountId, page);
    return { object: 'list', data: items.map(renderPurchase), has_more: items.length === page.limit };
  });

  server.get('/v1/credits/purchases/:id', { schema: { params: IdParams } }, async (request, reply) => {
    const key = await admitRead(deps, request, reply, 'manage');
    return renderPurchase(await payments.purchases.get(key.accountId, request.params.id));
  });

  // Stripe signs the exact bytes it sent: this route alone takes its body unparsed.
  void server.register((scope, _options, done) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
    scope.post('/webhooks/stripe', async (request) => {
      const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      const signature = request.headers['stripe-signature'];
      await payments.stripeEvents.receive(body, typeof signature === 'string' ? signature : undefined);
      return { received: true };
    });
    done();
  });
}
