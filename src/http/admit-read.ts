import type { FastifyReply, FastifyRequest } from 'fastify';
import { requirePermission, type Operation } from '../auth/index.js';
import { GatewayError } from '../errors/index.js';
import { rateLimitHeaders } from '../gateway/index.js';
import type { KeyRecord } from '../storage/index.js';
import type { HttpDeps } from './deps.js';

/**
 * Authentication and the account's request rate for the read endpoints (/v1/credits, /v1/models): the
 * requests-per-minute limit covers every request of the account (spec 8), chat or not.
 */
export async function admitRead(deps: HttpDeps, request: FastifyRequest, reply: FastifyReply, operation: Operation): Promise<KeyRecord> {
  const key = await deps.auth.authenticate(request.headers.authorization);
  requirePermission(key, operation);
  const account = await deps.wallet.accounts.get(key.accountId);
  if (!account) throw new GatewayError('invalid_api_key');
  const decision = await deps.limiter.admit(account.id, deps.limitsFor(account), 0);
  const headers = rateLimitHeaders(decision);
  if (!decision.allowed) {
    deps.metrics.rateLimited.inc({ code: 'rate_limit_exceeded' });
    throw new GatewayError('rate_limit_exceeded', { retryAfter: decision.retryAfterSeconds, headers });
  }
  reply.headers(headers);
  return key;
}
