/** The audit log for the signed-in owner or admin: the same page as `GET /v1/audit` (src/reports/audit.ts). */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { HttpDeps } from '../http/index.js';
import { QueryValue, single, typed } from '../http/routes/typed.js';
import { auditPage, parseAuditQuery } from '../reports/index.js';
import type { Sessions } from './session.js';

const AuditQuery = Type.Object({ limit: QueryValue, after: QueryValue, action: QueryValue });

export function auditRoutes(app: FastifyInstance, deps: HttpDeps, sessions: Sessions): void {
  const scope = typed(app);
  scope.get('/api/audit', { schema: { querystring: AuditQuery } }, async (request) => {
    const { accountId } = await sessions.require(request, 'audit');
    const raw = request.query;
    const page = parseAuditQuery({
      limit: single(raw.limit, 'limit'),
      after: single(raw.after, 'after'),
      action: single(raw.action, 'action'),
    });
    return auditPage(deps.storage, accountId, page);
  });
}
