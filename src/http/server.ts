/**
 * The Fastify instance: request ids, strict JSON validation, CORS (off unless configured), and the one place
 * where every error becomes the contract's envelope.
 */
import { randomBytes } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply } from 'fastify';
import { GatewayError, errorEnvelope } from '../errors/index.js';
import { pointerToParam } from '../gateway/schema.js';
import { endSpan, runInContext, startServerSpan, tracingEnabled, type Metrics } from '../observability/index.js';
import { isStorageUnavailable } from '../storage/index.js';

export interface ServerOptions {
  metrics: Metrics;
  bodyLimitBytes: number;
  /** The whole request (headers and body) must arrive within this; then 408 and the connection closes. */
  requestTimeoutMs: number;
  corsOrigins: string[];
  trustProxy: boolean;
  logger: FastifyBaseLogger;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const PROCESS_PREFIX = randomBytes(6).toString('hex');
let requestCounter = 0;

/** Unique across replicas (random per process) and cheap (no random bytes per request). */
function newRequestId(): string {
  return `req_${PROCESS_PREFIX}${(requestCounter++).toString(36).padStart(8, '0')}`;
}

export function createServer(options: ServerOptions): FastifyInstance {
  const server = Fastify({
    loggerInstance: options.logger,
    bodyLimit: options.bodyLimitBytes,
    // A client that trickles its body (or stops half-way) gets 408 instead of holding a connection forever.
    requestTimeout: options.requestTimeoutMs,
    http: { headersTimeout: options.requestTimeoutMs, connectionsCheckingInterval: Math.min(1_000, options.requestTimeoutMs) },
    clientErrorHandler: answerClientError,
    trustProxy: options.trustProxy,
    // Chat requests get one access-log line from the gateway with ids, model and cost; no per-request noise.
    logController: new LogController({ disableRequestLogging: true }),
    requestIdHeader: false,
    genReqId: (req) => {
      const incoming = req.headers['x-request-id'];
      return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : newRequestId();
    },
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: false, allErrors: false } },
    return503OnClosing: true,
    // Errors Fastify raises before routing (a path with broken %-escapes, an over-long path parameter) get the
    // contract's envelope and a request id too, instead of Fastify's own JSON.
    frameworkErrors: (error, request, reply) => {
      reply.header('x-request-id', request.id);
      const gatewayError =
        error.code === 'FST_ERR_BAD_URL'
          ? new GatewayError('invalid_request', { message: 'The request path is not a valid URL (malformed %-escape)' })
          : error.code === 'FST_ERR_MAX_PARAM_LENGTH'
            ? new GatewayError('not_found', { message: `Unknown route: ${request.method} ${request.url.split('?')[0]!.slice(0, 200)}` })
            : toGatewayError(error);
      return sendError(reply, gatewayError);
    },
  });

  // A callback hook, not an async one: it runs on every request, and a promise per request is measurable.
  server.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    // On the raw response so streamed (hijacked) answers are counted when their last byte leaves.
    const started = performance.now();
    reply.raw.once('close', () => {
      options.metrics.recordRequest(request.routeOptions.url ?? 'unmatched', reply.raw.statusCode, (performance.now() - started) / 1000);
    });
    applyCors(options.corsOrigins, request.headers.origin, request.url, reply);
    // A preflight is answered here; the request goes no further (done is not called).
    if (request.method === 'OPTIONS' && reply.hasHeader('access-control-allow-origin')) reply.code(204).send();
    else done();
  });

  if (tracingEnabled()) traceRequests(server);

  server.setErrorHandler((error: FastifyError | GatewayError, request, reply) => {
    const gatewayError = toGatewayError(error);
    if (gatewayError.status >= 500) request.log.error({ err: error }, 'request failed');
    return sendError(reply, gatewayError);
  });

  server.setNotFoundHandler((request, reply) =>
    sendError(reply, new GatewayError('not_found', { message: `Unknown route: ${request.method} ${request.url.split('?')[0]}` })),
  );

  return server;
}

/**
 * Errors Node's HTTP parser raises before there is a request (a request not received in time, headers too large,
 * bytes that are not HTTP): the contract's envelope written on the socket, which then closes.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || error.code === 'EPIPE') return void socket.destroy();
  const gatewayError =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? new GatewayError('request_timeout')
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? new GatewayError('headers_too_large')
        : new GatewayError('invalid_request', { message: 'The request is not valid HTTP' });
  const socketState = socket as Duplex & { bytesWritten?: number };
  if (socket.writable && !socketState.bytesWritten) {
    const body = JSON.stringify(errorEnvelope(gatewayError));
    socket.write(
      `HTTP/1.1 ${gatewayError.status} ${STATUS_CODES[gatewayError.status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/**
 * 429s that an automatic retry cannot fix within any sensible wait: `daily_limit_exceeded` says "retry after
 * midnight UTC" (hours), and the openai SDKs sleep for whatever Retry-After says unless `x-should-retry: false`.
 */
const DO_NOT_RETRY: ReadonlySet<string> = new Set(['daily_limit_exceeded']);

export function sendError(reply: FastifyReply, error: GatewayError): FastifyReply {
  const headers = DO_NOT_RETRY.has(error.code) ? { ...error.headers, 'x-should-retry': 'false' } : error.headers;
  return reply.code(error.status).headers(headers).send(errorEnvelope(error));
}

function toGatewayError(error: FastifyError | GatewayError): GatewayError {
  if (error instanceof GatewayError) return error;
  if (error.validation && error.validation.length > 0) {
    const first = error.validation[0]!;
    const { missingProperty: missing, additionalProperty: unknown } = first.params as { missingProperty?: string; additionalProperty?: string };
    const base = pointerToParam(first.instancePath);
    const child = missing ?? unknown;
    const path = child ? (base ? `${base}.${child}` : child) : base;
    const param = path || null;
    const where = error.validationContext === 'querystring' ? 'query parameter' : 'field';
    let message: string;
    if (missing) message = `Missing required ${where} '${path}'`;
    else if (unknown) message = `Unknown ${where} '${path}'`;
    else if (!path && error.validationContext === 'body') message = 'The request body must be a JSON object';
    else message = `Invalid ${where} '${path}': ${first.message ?? 'invalid value'}`;
    return new GatewayError('invalid_request', { message, param });
  }
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new GatewayError('request_too_large', { message: 'Request body is larger than the configured limit' });
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new GatewayError('invalid_request', { message: `We could not parse the JSON body of your request: ${error.message}` });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new GatewayError('invalid_request', { message: 'Content-Type must be application/json' });
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new GatewayError('invalid_request', { message: 'Content-Length does not match the body' });
  }
  if (error instanceof SyntaxError || error.statusCode === 400) {
    return new GatewayError('invalid_request', { message: `Invalid request: ${error.message}` });
  }
  if (error.statusCode === 413) return new GatewayError('request_too_large');
  if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
    return new GatewayError('invalid_request', { message: error.message });
  }
  if (isStorageUnavailable(error)) {
    return new GatewayError('service_unavailable', { message: 'The database is unavailable; try again shortly', cause: error });
  }
  return new GatewayError('internal_error', { cause: error });
}

function applyCors(allowed: string[], origin: string | undefined, url: string, reply: FastifyReply): void {
  if (!origin || allowed.length === 0 || url.startsWith('/admin')) return;
  if (!allowed.includes('*') && !allowed.includes(origin)) return;
  reply.header('access-control-allow-origin', allowed.includes('*') ? '*' : origin);
  reply.header('vary', 'Origin');
  reply.header('access-control-allow-headers', 'authorization, content-type, x-request-id, idempotency-key');
  reply.header('access-control-allow-methods', 'GET, POST, OPTIONS');
  reply.header('access-control-expose-headers', 'x-request-id, x-ratelimit-limit-requests, x-ratelimit-remaining-requests, x-ratelimit-reset-requests, x-ratelimit-limit-tokens, x-ratelimit-remaining-tokens, x-ratelimit-reset-tokens, retry-after');
}

/**
 * A server span per request (continuing an incoming `traceparent`); the rest of the request's lifecycle runs in
 * its context, so the gateway's own spans become its children. The span ends when the last byte leaves.
 */
function traceRequests(server: FastifyInstance): void {
  server.addHook('onRequest', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const started = startServerSpan(`${request.method} ${route}`, request.headers, {
      'http.request.method': request.method,
      'http.route': route,
      'url.path': request.url.split('?')[0]!,
      'tollgate.request_id': request.id,
    });
    if (!started) return done();
    reply.raw.once('close', () => endSpan(started.span, reply.raw.statusCode));
    runInContext(started.context, done);
  });
}
