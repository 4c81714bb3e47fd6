/**
 * "Add credits" for the signed-in user: the Purchases of `/v1/credits/purchases` (same validation, the same
 * Stripe Checkout), reached with the session instead of a full key; and the card auto-recharges, the other
 * payments the user makes through Stripe.
 */
import type { Static } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { publicBase, publicBaseMissing } from '../config/index.js';
import { GatewayError, invalidRequest } from '../errors/index.js';
import type { HttpDeps } from '../http/index.js';
import { checkoutReturnUrl, renderPurchase } from '../http/routes/purchases.js';
import { IdParams, PageQuery, typed } from '../http/routes/typed.js';
import { usdNumber } from '../money/index.js';
import type { RechargeRecord } from '../storage/index.js';
import type { Sessions } from './session.js';

const seconds = (ms: number | null) => (ms === null ? null : Math.floor(ms / 1000));

/** A card auto-recharge; `payment_intent_id` is Stripe's reference (none when Stripe could not be reached). */
export function renderRecharge(recharge: RechargeRecord): Record<string, unknown> {
  return {
    id: recharge.id,
    object: 'card_recharge',
    amount: usdNumber(recharge.amountNano),
    currency: 'USD',
    status: recharge.status,
    failure_reason: recharge.failure,
    payment_intent_id: recharge.paymentIntentId,
    receipt_url: recharge.receiptUrl,
    created: seconds(recharge.createdAt),
    settled_at: seconds(recharge.settledAt),
  };
}

export function purchaseRoutes(app: FastifyInstance, deps: HttpDeps, sessions: Sessions): void {
  const scope = typed(app);
  const { purchases } = deps.payments;

  async function buyer(request: FastifyRequest) {
    const { accountId } = await sessions.require(request, 'billing');
    const account = await deps.storage.accounts.get(accountId);
    if (!account) throw new GatewayError('not_signed_in');
    return { id: account.id, email: account.email };
  }

  /** Whether this gateway sells credit, and the bounds of one purchase. */
  scope.get('/api/purchasing', async (request) => {
    await sessions.require(request, 'billing');
    const reason =
      purchases.unavailableReason ??
      (publicBase(deps.config.server, request) ? null : publicBaseMissing('Buying credit', request));
    return {
      object: 'purchasing',
      available: reason === null,
      unavailable_reason: reason,
      min_amount: usdNumber(purchases.minNano),
      max_amount: usdNumber(purchases.maxNano),
      currency: 'USD',
    };
  });

  scope.post('/api/purchases', async (request, reply) => {
    const purchase = await purchases.create(await buyer(request), request.body, () =>
      checkoutReturnUrl(deps.config, request),
    );
    return reply.code(201).send(renderPurchase(purchase));
  });

  scope.get('/api/purchases', { schema: { querystring: PageQuery } }, async (request) => {
    const { id } = await buyer(request);
    const { limit, before } = pageOf(request.query);
    const rows = await purchases.list(id, { limit: limit + 1, ...(before ? { before } : {}) });
    const page = rows.slice(0, limit);
    return {
      object: 'list',
      data: page.map(renderPurchase),
      has_more: rows.length > limit,
      next_before: rows.length > limit ? page.at(-1)!.id : null,
    };
  });

  scope.get('/api/purchases/:id', { schema: { params: IdParams } }, async (request) => {
    const { id } = await buyer(request);
    return renderPurchase(await purchases.get(id, request.params.id));
  });

  /** The account's card auto-recharges, newest first: pending, succeeded or failed (with the reason). */
  scope.get('/api/recharges', { schema: { querystring: PageQuery } }, async (request) => {
    const { id } = await buyer(request);
    const { limit, before } = pageOf(request.query);
    const rows = await deps.storage.recharges.list(id, { limit: limit + 1, ...(before ? { before } : {}) });
    const page = rows.slice(0, limit);
    return {
      object: 'list',
      data: page.map(renderRecharge),
      has_more: rows.length > limit,
      next_before: rows.length > limit ? page.at(-1)!.id : null,
    };
  });
}

function pageOf(query: Static<typeof PageQuery>): { limit: number; before?: string } {
  const { limit: limitText = '10', before } = query;
  if (Array.isArray(limitText) || Array.isArray(before))
    throw invalidRequest('Query parameters may be given once each');
  const limit = Number(limitText);
  if (!/^\d+$/.test(limitText) || limit < 1 || limit > 100)
    throw invalidRequest("Invalid value for 'limit': a whole number from 1 to 100", 'limit');
  return before ? { limit, before } : { limit };
}
