/**
 * Every charge explained, for the key's own account: `GET /v1/generation` (one request), `GET /v1/usage` (an export,
 * streamed) and `GET /v1/key` (the calling key and its usage). Any key may read them; a project key sees only its
 * own requests.
 */
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { utcDay } from '../../billing/index.js';
import { GatewayError, invalidRequest } from '../../errors/index.js';
import { contentTypeOf, fileNameOf, parseUsageQuery, renderGeneration, usageExport } from '../../reports/index.js';
import type { KeyRecord } from '../../storage/index.js';
import { admitRead } from '../admit-read.js';
import type { HttpDeps } from '../deps.js';
import { renderKey, renderUsage } from '../render.js';

export function usageRoutes(server: FastifyInstance, deps: HttpDeps): void {
  server.get<{ Querystring: Record<string, unknown> }>('/v1/generation', async (request, reply) => {
    const key = await admitRead(deps, request, reply, 'credits');
    const id = request.query.id;
    if (typeof id !== 'string' || id === '')
      throw invalidRequest("'id' is required: the answer's id, its x-request-id, or its ledger entry id", 'id');
    const record = await deps.storage.charges.find(key.accountId, id);
    if (!record || !ownRequest(key, record.keyId)) throw notFound(id);
    const owner = record.keyId === null ? undefined : await deps.storage.keys.get(record.keyId);
    return renderGeneration(record, owner?.name ?? null);
  });

  server.get<{ Querystring: Record<string, unknown> }>('/v1/usage', async (request, reply) => {
    const key = await admitRead(deps, request, reply, 'credits');
    const query = parseUsageQuery(request.query);
    const keys = await deps.storage.keys.listByAccount(key.accountId);
    const range = {
      accountId: key.accountId,
      fromMs: query.fromMs,
      toMs: query.toMs,
      keyId: key.permissions === 'project' ? key.id : undefined,
    };
    const source = { charges: deps.storage.charges, keyNames: new Map(keys.map((k) => [k.id, k.name])) };
    void reply.header('content-type', contentTypeOf(query));
    if (query.format === 'csv') void reply.header('content-disposition', `attachment; filename="${fileNameOf(query)}"`);
    return reply.send(Readable.from(usageExport(source, range, query)));
  });

  server.get('/v1/key', async (request, reply) => {
    const admitted = await admitRead(deps, request, reply, 'credits');
    // The key as stored now: what it has spent and when it was last used move with every request.
    const [key, account] = await Promise.all([
      deps.storage.keys.get(admitted.id),
      deps.storage.accounts.get(admitted.accountId),
    ]);
    if (!key || !account) throw new GatewayError('invalid_api_key');
    const today = utcDay();
    const monthStart = `${today.slice(0, 7)}-01`;
    const [daily, monthly] = await Promise.all([
      deps.storage.usage.keyTotals(key.id, today, today),
      deps.storage.usage.keyTotals(key.id, monthStart, today),
    ]);
    const limits = deps.limitsFor(account);
    const { account_id: _account, revoked: _revoked, revoked_at: _revokedAt, ...shown } = renderKey(key);
    return {
      ...shown,
      rate_limit: { requests_per_minute: limits.requestsPerMinute, tokens_per_minute: limits.tokensPerMinute },
      usage: { daily: renderUsage(daily), monthly: renderUsage(monthly) },
    };
  });
}

/** A project key sees only its own requests; full and read-only keys, the whole account's. */
function ownRequest(key: KeyRecord, keyId: string | null): boolean {
  return key.permissions !== 'project' || keyId === key.id;
}

function notFound(id: string): GatewayError {
  return new GatewayError('not_found', { message: `No request '${id}' was charged to this account`, param: 'id' });
}
