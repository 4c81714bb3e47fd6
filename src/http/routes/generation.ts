/**
 * The metered endpoints Fastify serves (chat has its own fast path, `chat-endpoint.ts`): each hands its body to
 * the gateway's request path and sends back what it answers.
 */
import type { FastifyInstance } from 'fastify';
import { createCompletion, createEmbeddings } from '../../gateway/index.js';
import { accessLogger } from '../../observability/index.js';
import { clientSignalOf } from '../client-signal.js';
import type { HttpDeps } from '../deps.js';
import { refuseLargeBodyEarly } from '../refuse-early.js';
import { requestInput } from '../request-input.js';
import { sendAnswer } from '../stream-reply.js';

export function generationRoutes(server: FastifyInstance, deps: HttpDeps): void {
  const access = accessLogger(server.log);
  const onRequest = refuseLargeBodyEarly(deps);
  server.post('/v1/embeddings', { onRequest }, async (request, reply) => {
    const result = await createEmbeddings(requestInput(request, clientSignalOf(reply.raw), access, 'embeddings'), deps);
    void reply.headers(result.headers);
    return result.body;
  });
  server.post('/v1/completions', { onRequest }, async (request, reply) => {
    const client = clientSignalOf(reply.raw);
    const result = await createCompletion(requestInput(request, client, access, 'completions'), deps);
    return sendAnswer(request, reply, result, client);
  });
}
