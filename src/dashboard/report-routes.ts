/**
 * Every charge explained, for the signed-in user: the usage export behind "Download CSV" and one request's detail,
 * the same reports as `GET /v1/usage` and `GET /v1/generation` for the whole account (no key filter: the dashboard
 * shows every key's requests).
 */
import { Readable } from 'node:stream';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { HttpDeps } from '../http/index.js';
import { QueryValue, single, typed } from '../http/routes/typed.js';
import { contentTypeOf, explainCharge, exportUsage, fileNameOf, parseUsageQuery } from '../reports/index.js';
import type { Sessions } from './session.js';

const ExportQuery = Type.Object({ from: QueryValue, to: QueryValue, group_by: QueryValue, format: QueryValue });
const GenerationQuery = Type.Object({ id: QueryValue });

export function reportRoutes(app: FastifyInstance, deps: HttpDeps, sessions: Sessions): void {
  const scope = typed(app);

  scope.get('/api/usage/export', { schema: { querystring: ExportQuery } }, async (request, reply) => {
    const { accountId } = await sessions.require(request, 'usage');
    const raw = request.query;
    const query = parseUsageQuery({
      from: single(raw.from, 'from'),
      to: single(raw.to, 'to'),
      group_by: single(raw.group_by, 'group_by'),
      format: single(raw.format, 'format'),
    });
    const pieces = await exportUsage(deps.storage, { accountId }, query);
    return reply
      .header('content-type', contentTypeOf(query))
      .header('content-disposition', `attachment; filename="${fileNameOf(query)}"`)
      .header('cache-control', 'no-store')
      .send(Readable.from(pieces));
  });

  scope.get('/api/generation', { schema: { querystring: GenerationQuery } }, async (request) => {
    const { accountId } = await sessions.require(request, 'usage');
    // Another account's request is unknown, like one that does not exist.
    return explainCharge(deps.storage, { accountId }, single(request.query.id, 'id'));
  });
}
