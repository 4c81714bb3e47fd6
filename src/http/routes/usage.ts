/**
 * Every charge explained, for the key's own account: `GET /v1/generation` (one request), `GET /v1/usage` (an export,
 * streamed) and `GET /v1/key` (the calling key, its governance and its usage). Any key may read them; a project key sees only its
 * own requests.
 */
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { GatewayError } from '../../errors/index.js';
import {
  contentTypeOf,
  explainCharge,
  exportUsage,
  fileNameOf,
  keyUsageOf,
  parseUsageQuery,
  type ReportScope,
} from '../../reports/index.js';
import type { KeyRecord } from '../../storage/index.js';
import { admitRead } from '../admit-read.js';
import type { HttpDeps } from '../deps.js';
import { renderKey, renderUsage } from '../render.js';

export function usageRoutes(server: FastifyInstance, deps: HttpDeps): void {
  server.get<{ Querystring: Record<string, unknown> }>('/v1/generation', async (request, reply) => {
    const key = await admitRead(deps, request, reply, 'credits');
    const { id } = request.query;
    return explainCharge(deps.storage, scopeOf(key), typeof id === 'string' ? id : undefined);
  });

  server.get<{ Querystring: Record<string, unknown> }>('/v1/usage', async (request, reply) => {
    const key = await admitRead(deps, request, reply, 'credits');
    const query = parseUsageQuery(request.query);
    const pieces = await exportUsage(deps.storage, scopeOf(key), query);
    void reply.header('content-type', contentTypeOf(query));
    if (query.format === 'csv') void reply.header('content-disposition', `attachment; filename="${fileNameOf(query)}"`);
    return reply.send(Readable.from(pieces));
  });

  server.get('/v1/key', async (request, reply) => {
    const admitted = await admitRead(deps, request, reply, 'credits');
    // The key as stored now: what it has spent and when it was last used move with every request.
    const [key, account] = await Promise.all([
      deps.storage.keys.get(admitted.id),
      deps.storage.accounts.get(admitted.accountId),
    ]);
    if (!key || !account) throw new GatewayError('invalid_api_key');
    const { daily, monthly } = await keyUsageOf(deps.storage.usage, key.id);
    const limits = deps.limitsFor(account);
    // Its governance as the Key shape has it (`usage`: spent in the limit's current period), then the account's
    // rate limits and the key's usage today and this month.
    const { account_id: _account, revoked: _revoked, revoked_at: _revokedAt, ...shown } = renderKey(key);
    return {
      ...shown,
      rate_limit: { requests_per_minute: limits.requestsPerMinute, tokens_per_minute: limits.tokensPerMinute },
      usage_daily: renderUsage(daily),
      usage_monthly: renderUsage(monthly),
    };
  });
}

/** A project key sees only its own requests; full and read-only keys, the whole account's. */
function scopeOf(key: KeyRecord): ReportScope {
  return { accountId: key.accountId, keyId: key.permissions === 'project' ? key.id : undefined };
}
