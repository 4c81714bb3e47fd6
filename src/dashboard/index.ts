/**
 * The web dashboard under /dashboard: a JSON API for the signed-in user (session cookie + CSRF token) and the
 * single-page app that uses it. `/` redirects here.
 */
import fastifyCookie from '@fastify/cookie';
import type { FastifyInstance } from 'fastify';
import type { HttpDeps } from '../http/index.js';
import { accountRoutes } from './account-routes.js';
import { assetRoutes, loadBundle } from './assets.js';
import { auditRoutes } from './audit-routes.js';
import { authRoutes } from './auth-routes.js';
import { keyRoutes } from './key-routes.js';
import { invitationRoutes } from './invitation-routes.js';
import { memberRoutes } from './member-routes.js';
import { purchaseRoutes } from './purchase-routes.js';
import { reportRoutes } from './report-routes.js';
import { Sessions } from './session.js';
import { signupRoutes } from './signup-routes.js';
import { webhookRoutes } from './webhook-routes.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Sign-in and sign-up: accept the signed-out page's CSRF token. */
    anonymous?: boolean;
  }
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function registerDashboard(server: FastifyInstance, deps: HttpDeps): void {
  const sessions = new Sessions(deps.storage, deps.config.dashboard.session_ttl_hours * 3_600_000);
  const bundle = loadBundle();
  server.get('/', async (_request, reply) => reply.redirect('/dashboard/'));
  server.register(
    async (scope) => {
      await scope.register(fastifyCookie);
      // Before the body is parsed: a cross-site form post is refused without being read.
      scope.addHook('onRequest', async (request) => {
        if (SAFE_METHODS.has(request.method)) return;
        await sessions.checkUnsafe(request, request.routeOptions.config?.anonymous === true);
      });
      authRoutes(scope, deps, sessions);
      signupRoutes(scope, deps, sessions);
      accountRoutes(scope, deps, sessions);
      keyRoutes(scope, deps, sessions);
      webhookRoutes(scope, deps, sessions);
      memberRoutes(scope, deps, sessions);
      invitationRoutes(scope, deps, sessions);
      purchaseRoutes(scope, deps, sessions);
      reportRoutes(scope, deps, sessions);
      auditRoutes(scope, deps, sessions);
      assetRoutes(scope, bundle);
    },
    { prefix: '/dashboard' },
  );
}
