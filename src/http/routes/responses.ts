/** POST /v1/responses (OpenAI's Responses API): the body goes to the gateway's request path, its answer back as JSON or SSE. */
import type { FastifyInstance } from 'fastify';
import { createResponse } from '../../gateway/index.js';
import { accessLogger } from '../../observability/index.js';
import { clientSignalOf } from '../client-signal.js';
import type { HttpDeps } from '../deps.js';
import { refuseLargeBodyEarly } from '../refuse-early.js';
import { requestInput } from '../request-input.js';
import { sendAnswer } from '../stream-reply.js';

export function responseRoutes(server: FastifyInstance, deps: HttpDeps): void {
  const access = accessLogger(server.log);
  server.post('/v1/responses', { onRequest: refuseLargeBodyEarly(deps) }, async (request, reply) => {
    const client = clientSignalOf(reply.raw);
    const input = requestInput(request, client, access, 'responses');
    const result = await createResponse(input, deps, deps.storage.responses);
    return sendAnswer(request, reply, result, client);
  });
}
