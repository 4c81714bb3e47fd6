/**
 * POST /v1/chat/completions, answered from Node's request event ahead of Fastify. It is the route every metered
 * request takes, and Fastify's work per request (its Request and Reply objects, hooks, a child logger, the
 * content-type parser, reply serialisation) is a measurable share of a request's CPU (ADR 0040). What every
 * request gets (request id, CORS, request metrics, server span, error envelope) comes from `edge.ts`, likewise for
 * Fastify's routes; the body is read by Fastify's rules (`json-body.ts`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import { GatewayError } from '../errors/index.js';
import { createChatCompletion, refuseBeforeReading, type GatewayDeps } from '../gateway/index.js';
import { plainJson } from '../money/index.js';
import { accessLogger, runInContext, type Metrics } from '../observability/index.js';
import { clientAddress } from './client-address.js';
import { clientSignalOf, singleHeader } from './client-signal.js';
import { errorAnswer, openRequest, traceRequest, type KeyOfRequest } from './edge.js';
import { errorResponse } from './errors.js';
import { writeEventStream } from './event-stream.js';
import { declaredBytes, readJsonBody } from './json-body.js';
import { requestIdFor } from './request-id.js';

export const CHAT_PATH = '/v1/chat/completions';

export interface ChatEndpointOptions {
  deps: GatewayDeps;
  metrics: Metrics;
  bodyLimitBytes: number;
  corsOrigins: string[];
  logger: FastifyBaseLogger;
  /** The key a request carried, named in the log line of a refusal. */
  keyOf?: KeyOfRequest;
  /** `server.trust_proxy`: the client's address is the first of `X-Forwarded-For`, as Fastify's `request.ip`. */
  trustProxy?: boolean;
}

/** A request this endpoint answers (any other goes to Fastify). */
export function isChatRequest(req: IncomingMessage): boolean {
  return req.method === 'POST' && (req.url === CHAT_PATH || req.url!.startsWith(`${CHAT_PATH}?`));
}

/** The request listener; `closing` is true once the server has stopped accepting connections. */
export function chatEndpoint(
  options: ChatEndpointOptions,
): (req: IncomingMessage, res: ServerResponse, closing: boolean) => void {
  const access = accessLogger(options.logger);
  return (req, res, closing) => {
    const requestId = requestIdFor(req.headers);
    openRequest(options, res, requestId, req.headers, CHAT_PATH, CHAT_PATH);
    if (closing) {
      // Fastify's return503OnClosing for this route: a keep-alive connection must not start new work.
      res.setHeader('connection', 'close');
      return sendError(
        res,
        new GatewayError('service_unavailable', { message: 'The server is shutting down; try again' }),
      );
    }
    const context = traceRequest(res, 'POST', CHAT_PATH, CHAT_PATH, req.headers, requestId);
    if (!context) return void serve(req, res, requestId, options, access);
    runInContext(context, () => void serve(req, res, requestId, options, access));
  };
}

async function serve(
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
  options: ChatEndpointOptions,
  access: FastifyBaseLogger,
): Promise<void> {
  const log = () => options.logger.child({ reqId: requestId });
  try {
    const bodyBytes = declaredBytes(req.headers['content-length']);
    const credentials = { authorization: req.headers.authorization, clientIp: clientAddress(req, options.trustProxy) };
    await refuseBeforeReading(options.deps, credentials, bodyBytes);
    const body = await readJsonBody(req, options.bodyLimitBytes);
    const client = clientSignalOf(res);
    const result = await createChatCompletion(
      {
        ...credentials,
        body,
        bodyBytes,
        idempotencyKey: singleHeader(req.headers['idempotency-key']),
        requestId,
        endpoint: CHAT_PATH,
        signal: client,
        log: (fields) => access.info({ reqId: requestId, ...fields }, 'chat completion'),
      },
      options.deps,
    );
    if (result.kind === 'json') return sendJson(res, 200, result.headers, result.body);
    await writeEventStream(res, result, client, (error) => log().error({ err: error }, 'stream failed'));
  } catch (error) {
    const answer = errorAnswer(error, log, { method: 'POST', url: CHAT_PATH, headers: req.headers }, options.keyOf);
    if (res.headersSent) return void res.destroy();
    sendJson(res, answer.status, answer.headers, answer.body);
  }
}

function sendError(res: ServerResponse, error: GatewayError): void {
  const { status, headers, body } = errorResponse(error);
  sendJson(res, status, headers, body);
}

function sendJson(res: ServerResponse, status: number, headers: Record<string, string>, body: unknown): void {
  const payload = plainJson(JSON.stringify(body));
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(payload),
  });
  res.end(payload);
}
