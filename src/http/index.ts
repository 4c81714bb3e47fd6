import type { FastifyInstance } from 'fastify';
import type { HttpDeps } from './deps.js';
import { adminRoutes } from './routes/admin.js';
import { chatRoutes } from './routes/chat.js';
import { creditRoutes } from './routes/credits.js';
import { modelRoutes } from './routes/models.js';
import { opsRoutes } from './routes/ops.js';
import { webhookRoutes } from './routes/webhooks.js';
import { createServer, type ServerOptions } from './server.js';

export type { HttpDeps } from './deps.js';

export function buildHttpServer(options: ServerOptions, deps: HttpDeps): FastifyInstance {
  const server = createServer(options);
  opsRoutes(server, deps);
  chatRoutes(server, deps);
  modelRoutes(server, deps);
  creditRoutes(server, deps);
  adminRoutes(server, deps);
  if (deps.webhooks) webhookRoutes(server, deps, deps.webhooks);
  return server;
}
