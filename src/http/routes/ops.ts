import type { FastifyInstance } from 'fastify';
import { openApiDocument } from '../../api/index.js';
import { GatewayError } from '../../errors/index.js';
import { sendError } from '../server.js';
import type { AdminGuard } from '../admin-guard.js';
import type { HttpDeps } from '../deps.js';

/** Liveness, readiness (the database answers), Prometheus metrics and the OpenAPI document. */
export function opsRoutes(server: FastifyInstance, deps: HttpDeps, guard: AdminGuard): void {
  server.get('/health', () => ({ status: 'ok' }));

  const openapi = JSON.stringify(openApiDocument());
  server.get('/v1/openapi.json', async (_request, reply) =>
    reply.header('content-type', 'application/json; charset=utf-8').send(openapi),
  );

  server.get('/ready', async (_request, reply) => {
    try {
      await deps.storage.ping();
      return { status: 'ready', database: deps.storage.dialect };
    } catch {
      return sendError(reply, new GatewayError('service_unavailable', { message: 'The database is not reachable' }));
    }
  });

  server.get('/metrics', async (request, reply) => {
    if (!deps.config.metrics_public) guard.check(request, 'The metrics endpoint takes the admin token');
    return reply.header('content-type', deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
  });
}
