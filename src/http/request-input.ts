/** What the gateway's request path needs from a Fastify request, for every metered route but chat's fast path. */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { RequestInput } from '../gateway/index.js';
import { singleHeader, type ClientSignal } from './client-signal.js';
import { declaredBytes } from './json-body.js';

/** The request's input; `client` aborts when the client goes away before the answer, `what` names its log line. */
export function requestInput(
  request: FastifyRequest,
  client: ClientSignal,
  access: FastifyInstance['log'],
  what: string,
): RequestInput {
  return {
    authorization: request.headers.authorization,
    clientIp: request.ip,
    body: request.body,
    bodyBytes: declaredBytes(request.headers['content-length']),
    idempotencyKey: singleHeader(request.headers['idempotency-key']),
    requestId: request.id,
    endpoint: request.routeOptions.url,
    signal: client,
    log: (fields) => access.info({ reqId: request.id, ...fields }, what),
  };
}
