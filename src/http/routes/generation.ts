/**
 * The metered endpoints Fastify serves (chat has its own fast path, `chat-endpoint.ts`): each hands its body to
 * the gateway's request path and sends back what it answers.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { createCompletion, createEmbeddings, type RequestInput } from '../../gateway/index.js';
import { accessLogger } from '../../observability/index.js';
import { clientSignalOf, singleHeader, type ClientSignal } from '../client-signal.js';
import type { HttpDeps } from '../deps.js';
import { sendAnswer } from '../stream-reply.js';

export function generationRoutes(server: FastifyInstance, deps: HttpDeps): void {
  const access = accessLogger(server.log);
  server.post('/v1/embeddings', async (request, reply) => {
    const result = await createEmbeddings(inputOf(request, clientSignalOf(reply.raw), access, 'embeddings'), deps);
    void reply.headers(result.headers);
    return result.body;
  });
  server.post('/v1/completions', async (request, reply) => {
    const client = clientSignalOf(reply.raw);
    const result = await createCompletion(inputOf(request, client, access, 'completions'), deps);
    return sendAnswer(request, reply, result, client);
  });
}

/** What the gateway needs from a Fastify request; the signal aborts when the client goes away before the answer. */
function inputOf(
  request: FastifyRequest,
  client: ClientSignal,
  access: FastifyInstance['log'],
  what: string,
): RequestInput {
  return {
    authorization: request.headers.authorization,
    body: request.body,
    idempotencyKey: singleHeader(request.headers['idempotency-key']),
    requestId: request.id,
    signal: client,
    log: (fields) => access.info({ reqId: request.id, ...fields }, what),
  };
}
