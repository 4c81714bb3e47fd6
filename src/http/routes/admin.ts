import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { usdNumber } from '../../billing/index.js';
import { invalidRequest } from '../../errors/index.js';
import {
  AddCreditsSchema,
  CreateAccountSchema,
  CreateKeySchema,
  operator,
  PatchAccountSchema,
  PatchKeySchema,
  RefundPurchaseSchema,
  usd,
} from '../../admin/index.js';
import { auditPage, parseAuditQuery } from '../../reports/index.js';
import type { AdminGuard } from '../admin-guard.js';
import type { HttpDeps } from '../deps.js';
import { renderAccount, renderKey, renderLedgerEntry } from '../render.js';
import { renderPurchase, renderRefund } from './purchases.js';
import { IdParams, PageQuery, QueryValue, single, typed } from './typed.js';

const AfterQuery = Type.Object({ limit: QueryValue, after: QueryValue });
const PurchaseParams = Type.Object({ id: Type.String(), purchase: Type.String() });

/** `?limit=` of the admin lists: 1 to `max`, `fallback` when absent. */
function pageLimit(limit: string | string[] | undefined, fallback: number, max: number): number {
  const parsed = limit === undefined ? fallback : Number(limit);
  if (!Number.isInteger(parsed) || parsed < 1 || parsed > max)
    throw invalidRequest(`limit must be 1 to ${max}`, 'limit');
  return parsed;
}

/**
 * One page of an account's history (ledger, purchases), newest first, `?before=` a cursor: 404 for an unknown
 * account; 1 to 500 items (50 without `?limit=`); `has_more` when the page is full.
 */
async function historyPage<T>(
  deps: HttpDeps,
  accountId: string,
  query: Static<typeof PageQuery>,
  list: (accountId: string, page: { limit: number; before?: string }) => Promise<T[]>,
  render: (item: T) => Record<string, unknown>,
): Promise<{ object: 'list'; data: Record<string, unknown>[]; has_more: boolean }> {
  await deps.admin.requireAccount(accountId);
  const limit = pageLimit(query.limit, 50, 500);
  const before = single(query.before, 'before');
  const items = await list(accountId, { limit, ...(before ? { before } : {}) });
  return { object: 'list', data: items.map(render), has_more: items.length === limit };
}

/** Every field of a new key is optional, so a POST without a body means `{}`. */
function emptyBodyIsObject(request: FastifyRequest, _reply: FastifyReply, done: () => void): void {
  request.body ??= {};
  done();
}

/** The operator API of the contract, behind the admin token. */
export function adminRoutes(server: FastifyInstance, deps: HttpDeps, guard: AdminGuard): void {
  server.register((scope, _options, done) => {
    const admin = typed(scope);
    admin.addHook('onRequest', (request, _reply, done) => {
      guard.check(request);
      done();
    });

    admin.get('/admin/accounts', { schema: { querystring: AfterQuery } }, async (request) => {
      const parsed = pageLimit(request.query.limit, 100, 1000);
      const after = single(request.query.after, 'after');
      const accounts = await deps.admin.listAccounts({ limit: parsed, ...(after ? { after } : {}) });
      return { object: 'list', data: accounts.map((a) => renderAccount(a, deps)) };
    });

    admin.post('/admin/accounts', { schema: { body: CreateAccountSchema } }, async (request, reply) => {
      const { account, key } = await deps.admin.createAccount(request.body);
      return reply.code(201).send({ ...renderAccount(account, deps), api_key: key.key, api_key_id: key.record.id });
    });

    admin.get('/admin/accounts/:id', { schema: { params: IdParams } }, async (request) => {
      const { account, keys } = await deps.admin.getAccount(request.params.id);
      return { ...renderAccount(account, deps), keys: keys.map(renderKey) };
    });

    admin.patch('/admin/accounts/:id', { schema: { params: IdParams, body: PatchAccountSchema } }, async (request) => {
      const account = await deps.admin.updateAccount(request.params.id, request.body, undefined, operator(request.ip));
      return renderAccount(account, deps);
    });

    admin.post(
      '/admin/accounts/:id/keys',
      { schema: { params: IdParams, body: CreateKeySchema }, preValidation: emptyBodyIsObject },
      async (request, reply) => {
        const created = await deps.admin.createKey(request.params.id, request.body, operator(request.ip));
        return reply.code(201).send({ ...renderKey(created.record), key: created.key });
      },
    );

    admin.post(
      '/admin/accounts/:id/credits',
      { schema: { params: IdParams, body: AddCreditsSchema } },
      async (request) => {
        const { amount, note } = request.body;
        const { id } = request.params;
        const result = await deps.admin.addCredits(id, amount, note, operator(request.ip).actor);
        return {
          object: 'credit_adjustment',
          account_id: id,
          amount: usdNumber(result.appliedNano),
          balance: { credits: usdNumber(result.balanceNano), currency: 'USD' },
        };
      },
    );

    admin.get('/admin/accounts/:id/ledger', { schema: { params: IdParams, querystring: PageQuery } }, async (request) =>
      historyPage(
        deps,
        request.params.id,
        request.query,
        (id, page) => deps.storage.ledger.list(id, page),
        renderLedgerEntry,
      ),
    );

    // The account's audit log, as its owners read it: the operator's view, a closed account's included.
    admin.get<{ Params: { id: string }; Querystring: Record<string, unknown> }>(
      '/admin/accounts/:id/audit',
      { schema: { params: IdParams } },
      async (request) => {
        await deps.admin.requireAccount(request.params.id);
        return auditPage(deps.storage, request.params.id, parseAuditQuery(request.query));
      },
    );

    admin.get(
      '/admin/accounts/:id/purchases',
      { schema: { params: IdParams, querystring: PageQuery } },
      async (request) =>
        historyPage(
          deps,
          request.params.id,
          request.query,
          (id, page) => deps.payments.purchases.list(id, page),
          renderPurchase,
        ),
    );

    admin.post(
      '/admin/accounts/:id/purchases/:purchase/refund',
      { schema: { params: PurchaseParams, body: RefundPurchaseSchema }, preValidation: emptyBodyIsObject },
      async (request) => {
        const { id, purchase } = request.params;
        const { amount } = request.body;
        await deps.admin.requireAccount(id);
        const refunded = await deps.payments.reversals.refund(
          id,
          purchase,
          amount === undefined ? undefined : usd(amount, 'amount'),
          operator(request.ip).actor,
        );
        return renderRefund(refunded, refunded.balanceNano);
      },
    );

    admin.patch('/admin/keys/:id', { schema: { params: IdParams, body: PatchKeySchema } }, async (request) =>
      renderKey(await deps.admin.updateKey(request.params.id, request.body, operator(request.ip))),
    );

    admin.delete('/admin/keys/:id', { schema: { params: IdParams } }, async (request) =>
      renderKey(await deps.admin.revokeKey(request.params.id, operator(request.ip))),
    );
    done();
  });
}
