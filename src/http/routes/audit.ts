/** `GET /v1/audit`: the account's audit log, newest first, for its `full` and `management` keys. */
import type { FastifyInstance } from 'fastify';
import { auditPage, parseAuditQuery } from '../../reports/index.js';
import { admitRead } from '../admit-read.js';
import type { HttpDeps } from '../deps.js';

export function auditRoutes(server: FastifyInstance, deps: HttpDeps): void {
  server.get<{ Querystring: Record<string, unknown> }>('/v1/audit', async (request, reply) => {
    const key = await admitRead(deps, request, reply, 'audit');
    return auditPage(deps.storage, key.accountId, parseAuditQuery(request.query));
  });
}
