import type { FastifyInstance } from 'fastify';
import { AdminGuard } from './admin-guard.js';
import type { HttpDeps } from './deps.js';
import { chatEndpoint, isChatRequest } from './chat-endpoint.js';
import { keyOfRequest } from './key-of-request.js';
import { keyRoutes } from './routes/keys.js';
import { adminRoutes } from './routes/admin.js';
import { usageRoutes } from './routes/usage.js';
import { auditRoutes } from './routes/audit.js';
import { creditRoutes } from './routes/credits.js';
import { generationRoutes } from './routes/generation.js';
import { messagesRoutes } from './routes/messages.js';
import { modelRoutes } from './routes/models.js';
import { opsRoutes } from './routes/ops.js';
import { purchaseRoutes } from './routes/purchases.js';
import { responseRoutes } from './routes/responses.js';
import { webhookRoutes } from './routes/webhooks.js';
import { createServer, type ServerOptions } from './server.js';

export type { HttpDeps } from './deps.js';

export function buildHttpServer(options: ServerOptions, deps: HttpDeps): FastifyInstance {
  // POST /v1/chat/completions is answered ahead of Fastify (see chat-endpoint.ts); every other route by Fastify.
  const keyOf = keyOfRequest(deps);
  const chat = chatEndpoint({
    deps,
    keyOf,
    metrics: options.metrics,
    bodyLimitBytes: options.bodyLimitBytes,
    corsOrigins: options.corsOrigins,
    logger: options.logger,
    trustProxy: options.trustProxy,
  });
  const server = createServer({ ...options, keyOf, ahead: { matches: isChatRequest, handle: chat } });
  // One throttle of failed admin authentication for /admin and /metrics.
  const adminGuard = new AdminGuard(deps.isAdminToken, deps.config.server.admin_auth_max_failures);
  opsRoutes(server, deps, adminGuard);
  modelRoutes(server, deps);
  generationRoutes(server, deps);
  responseRoutes(server, deps);
  messagesRoutes(server, deps);
  creditRoutes(server, deps);
  usageRoutes(server, deps);
  auditRoutes(server, deps);
  purchaseRoutes(server, deps, deps.payments);
  adminRoutes(server, deps, adminGuard);
  keyRoutes(server, deps);
  if (deps.webhooks) webhookRoutes(server, deps, deps.webhooks);
  return server;
}
