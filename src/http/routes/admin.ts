import type { FastifyInstance, FastifyRequest } from 'fastify';
import { usdNumber } from '../../billing/index.js';
import { GatewayError, invalidRequest } from '../../errors/index.js';
import { AddCreditsSchema, CreateAccountSchema, CreateKeySchema, PatchAccountSchema, RefundPurchaseSchema, usd, type AccountPatch, type NewKeyRequest } from '../../admin/index.js';
import type { AdminGuard } from '../admin-guard.js';
import type { HttpDeps } from '../deps.js';
import { renderAccount, renderKey, renderLedgerEntry } from '../render.js';
import { renderPurchase, renderRefund } from './purchases.js';

type IdParams = { id: string };

/** Every field of a new key is optional, so a POST without a body means `{}`. */
async function emptyBodyIsObject(request: FastifyRequest): Promise<void> {
  request.body ??= {};
}

/** The operator API of the contract, behind the admin token. */
export function adminRoutes(server: FastifyInstance, deps: HttpDeps, guard: AdminGuard): void {
  server.register(async (admin) => {
    admin.addHook('onRequest', async (request) => guard.check(request));

    admin.get('/admin/accounts', async (request) => {
      const { limit, after } = request.query as { limit?: string; after?: string };
      const parsed = limit === undefined ? 100 : Number(limit);
      if (!Number.isInteger(parsed) || parsed < 1 || parsed > 1000) throw invalidRequest('limit must be 1 to 1000', 'limit');
      const accounts = await deps.admin.listAccounts({ limit: parsed, ...(after ? { after } : {}) });
      return { object: 'list', data: accounts.map((a) => renderAccount(a, deps)) };
    });

    admin.post('/admin/accounts', { schema: { body: CreateAccountSchema } }, async (request, reply) => {
      const { account, key } = await deps.admin.createAccount(request.body as { email: string; plan?: string });
      return reply.code(201).send({ ...renderAccount(account, deps), api_key: key.key, api_key_id: key.record.id });
    });

    admin.get('/admin/accounts/:id', async (request) => {
      const { account, keys } = await deps.admin.getAccount((request.params as IdParams).id);
      return { ...renderAccount(account, deps), keys: keys.map(renderKey) };
    });

    admin.patch('/admin/accounts/:id', { schema: { body: PatchAccountSchema } }, async (request) => {
      const account = await deps.admin.updateAccount((request.params as IdParams).id, request.body as AccountPatch);
      return renderAccount(account, deps);
    });

    admin.post('/admin/accounts/:id/keys', { schema: { body: CreateKeySchema }, preValidation: emptyBodyIsObject }, async (request, reply) => {
      const created = await deps.admin.createKey((request.params as IdParams).id, (request.body ?? {}) as NewKeyRequest);
      return reply.code(201).send({ ...renderKey(created.record), key: created.key });
    });

    admin.post('/admin/accounts/:id/credits', { schema: { body: AddCreditsSchema } }, async (request) => {
      const { amount, note } = request.body as { amount: number; note?: string };
      const id = (request.params as IdParams).id;
      const result = await deps.admin.addCredits(id, amount, note);
      return { object: 'credit_adjustment', account_id: id, amount: usdNumber(result.appliedNano), balance: { credits: usdNumber(result.balanceNano), currency: 'USD' } };
    });

    admin.get('/admin/accounts/:id/ledger', async (request) => {
      const id = (request.params as IdParams).id;
      await deps.admin.getAccount(id);
      const { limit, before } = request.query as { limit?: string; before?: string };
      const parsed = limit === undefined ? 50 : Number(limit);
      if (!Number.isInteger(parsed) || parsed < 1 || parsed > 500) throw invalidRequest('limit must be 1 to 500', 'limit');
      const entries = await deps.storage.ledger.list(id, { limit: parsed, ...(before ? { before } : {}) });
      return { object: 'list', data: entries.map(renderLedgerEntry), has_more: entries.length === parsed };
    });

    admin.get('/admin/accounts/:id/purchases', async (request) => {
      const id = (request.params as IdParams).id;
      await deps.admin.getAccount(id);
      const { limit, before } = request.query as { limit?: string; before?: string };
      const parsed = limit === undefined ? 50 : Number(limit);
      if (!Number.isInteger(parsed) || parsed < 1 || parsed > 500) throw invalidRequest('limit must be 1 to 500', 'limit');
      const purchases = await deps.payments.purchases.list(id, { limit: parsed, ...(before ? { before } : {}) });
      return { object: 'list', data: purchases.map(renderPurchase), has_more: purchases.length === parsed };
    });

    admin.post('/admin/accounts/:id/purchases/:purchase/refund', { schema: { body: RefundPurchaseSchema }, preValidation: emptyBodyIsObject }, async (request) => {
      const { id, purchase } = request.params as { id: string; purchase: string };
      const { amount } = request.body as { amount?: number };
      await deps.admin.getAccount(id);
      const refunded = await deps.payments.reversals.refund(id, purchase, amount === undefined ? undefined : usd(amount, 'amount'));
      const { account } = await deps.admin.getAccount(id);
      return renderRefund(refunded, account.balanceNano);
    });

    admin.delete('/admin/keys/:id', async (request) => renderKey(await deps.admin.revokeKey((request.params as IdParams).id)));
  });
}
