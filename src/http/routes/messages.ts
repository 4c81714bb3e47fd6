/**
 * Anthropic's Messages API: POST /v1/messages and /v1/messages/count_tokens. The key comes in `x-api-key` (as
 * Anthropic's SDKs and Claude Code send it) or `Authorization`; errors use Anthropic's envelope with the gateway's
 * status and headers, so Anthropic's SDKs raise their own error classes.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { authorizationOf, countMessageTokens, createMessage, type RequestInput } from '../../gateway/index.js';
import { accessLogger } from '../../observability/index.js';
import { anthropicErrorBody } from '../../protocols/anthropic-messages/index.js';
import { clientSignalOf, singleHeader, type ClientSignal } from '../client-signal.js';
import type { HttpDeps } from '../deps.js';
import { refuseLargeBodyEarly } from '../refuse-early.js';
import { errorAnswer } from '../edge.js';
import { keyOfRequest } from '../key-of-request.js';
import { requestInput } from '../request-input.js';
import { sendAnswer } from '../stream-reply.js';

export function messagesRoutes(server: FastifyInstance, deps: HttpDeps): void {
  const keyOf = keyOfRequest(deps);
  void server.register((scope, _options, done) => {
    const access = accessLogger(scope.log);
    scope.setErrorHandler((error, request, reply) => {
      const { status, headers, body } = errorAnswer(error, () => request.log, request, keyOf);
      return reply.code(status).headers(headers).send(anthropicErrorBody(status, body.error.message));
    });
    // Anthropic's SDKs read the request id from `request-id`.
    scope.addHook('onRequest', (request, reply, done) => {
      void reply.header('request-id', request.id);
      done();
    });
    const onRequest = refuseLargeBodyEarly(deps, authorizationOfRequest);
    scope.post('/v1/messages', { onRequest }, async (request, reply) => {
      const client = clientSignalOf(reply.raw);
      const answer = await createMessage(inputOf(request, client, access), deps);
      return sendAnswer(request, reply, answer, client);
    });
    scope.post('/v1/messages/count_tokens', { onRequest }, async (request, reply) => {
      const result = await countMessageTokens(inputOf(request, clientSignalOf(reply.raw), access), deps);
      void reply.headers(result.headers);
      return result.body;
    });
    done();
  });
}

/** As every route's, but the key may come in `x-api-key`, and the client's beta features go upstream. */
function inputOf(request: FastifyRequest, client: ClientSignal, access: FastifyInstance['log']): RequestInput {
  return {
    ...requestInput(request, client, access, 'messages'),
    authorization: authorizationOfRequest(request),
    forwardHeaders: betaOf(request),
  };
}

/** The key from `Authorization` or `x-api-key`. */
function authorizationOfRequest(request: FastifyRequest): string | undefined {
  return authorizationOf(request.headers.authorization, singleHeader(request.headers['x-api-key']));
}

/** Claude Code and the SDKs' beta features are named in `anthropic-beta`; Anthropic needs it with their fields. */
function betaOf(request: FastifyRequest): Record<string, string> | undefined {
  const beta = request.headers['anthropic-beta'];
  if (beta === undefined) return undefined;
  return { 'anthropic-beta': Array.isArray(beta) ? beta.join(',') : beta };
}
