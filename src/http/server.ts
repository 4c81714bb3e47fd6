/**
 * The Fastify instance: what every request gets (`edge.ts`: request id, CORS, metrics, span, error envelope),
 * strict JSON validation, and the chat endpoint answered ahead of it.
 */
import {
  createServer as createHttpServer,
  STATUS_CODES,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { Duplex } from 'node:stream';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import { GatewayError, errorEnvelope, messageOf } from '../errors/index.js';
import { plainJson } from '../money/index.js';
import { runInContext, tracingEnabled, type Metrics } from '../observability/index.js';
import { errorAnswer, logRefusal, openRequest, traceRequest, type KeyOfRequest } from './edge.js';
import { errorResponse, fromFastify, retryAdvice } from './errors.js';
import { parseJsonText } from './json-body.js';
import { requestIdFor } from './request-id.js';

export interface ServerOptions {
  metrics: Metrics;
  bodyLimitBytes: number;
  /** The whole request (headers and body) must arrive within this; then 408 and the connection closes. */
  requestTimeoutMs: number;
  corsOrigins: string[];
  trustProxy: boolean;
  logger: FastifyBaseLogger;
  /** The key a request carried, named in the log line of a refusal. */
  keyOf?: KeyOfRequest;
  /** A route answered from Node's request event ahead of Fastify (the chat endpoint); `closing` once the server stops accepting. */
  ahead?: {
    matches(req: IncomingMessage): boolean;
    handle(req: IncomingMessage, res: ServerResponse, closing: boolean): void;
  };
}

/** Fastify's default for idle keep-alive connections, kept for the server this module now creates. */
const KEEP_ALIVE_TIMEOUT_MS = 72_000;

export function createServer(options: ServerOptions): FastifyInstance {
  const unused = unusedConnections();
  const server = Fastify({
    loggerInstance: options.logger,
    bodyLimit: options.bodyLimitBytes,
    serverFactory: (fastifyHandler) => {
      const { ahead } = options;
      const http: Server = createHttpServer(
        {
          // A client that trickles its body (or stops half-way) gets 408 instead of holding a connection forever.
          requestTimeout: options.requestTimeoutMs,
          headersTimeout: options.requestTimeoutMs,
          connectionsCheckingInterval: Math.min(1_000, options.requestTimeoutMs),
        },
        (req, res) => {
          unused.used(req.socket);
          if (ahead?.matches(req)) ahead.handle(req, res, !http.listening);
          else fastifyHandler(req, res);
        },
      );
      http.on('connection', unused.opened);
      http.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
      return http;
    },
    clientErrorHandler: (error, socket) => answerClientError(error, socket, options.logger),
    trustProxy: options.trustProxy,
    // Chat requests get one access-log line from the gateway with ids, model and cost; no per-request noise.
    logController: new LogController({ disableRequestLogging: true }),
    requestIdHeader: false,
    genReqId: (req) => requestIdFor(req.headers),
    // `verbose` gives each error its schema and value, which `errors.ts` words the validation failure from.
    ajv: {
      customOptions: {
        coerceTypes: false,
        removeAdditional: false,
        useDefaults: false,
        allErrors: false,
        verbose: true,
      },
    },
    return503OnClosing: true,
    // Errors Fastify raises before routing (a path with broken %-escapes, an over-long path parameter) get the
    // contract's envelope and a request id too, instead of Fastify's own JSON.
    frameworkErrors: (error, request, reply) => {
      reply.header('x-request-id', request.id);
      const gatewayError =
        error.code === 'FST_ERR_BAD_URL'
          ? new GatewayError('invalid_request', { message: 'The request path is not a valid URL (malformed %-escape)' })
          : error.code === 'FST_ERR_MAX_PARAM_LENGTH'
            ? new GatewayError('not_found', {
                message: `Unknown route: ${request.method} ${request.url.split('?')[0]!.slice(0, 200)}`,
              })
            : fromFastify(error);
      void refuse(request, reply, gatewayError, options.keyOf);
    },
  });

  server.addHook('preClose', (done) => {
    unused.destroyAll();
    done();
  });

  // A callback hook, not an async one: it runs on every request, and a promise per request is measurable.
  server.addHook('onRequest', (request, reply, done) => {
    const cors = openRequest(
      options,
      reply.raw,
      request.id,
      request.headers,
      request.url,
      request.routeOptions.url ?? 'unmatched',
    );
    // A preflight is answered here; the request goes no further (done is not called).
    if (request.method === 'OPTIONS' && cors) reply.code(204).send();
    else done();
  });

  if (tracingEnabled()) traceRequests(server);

  // Fastify's JSON parser with the nesting bound. An empty body is no body: many clients send the Content-Type on
  // every call, and a route that needs a body says so when it validates one.
  server.removeContentTypeParser('application/json');
  server.addContentTypeParser<string>('application/json', { parseAs: 'string' }, (_request, text, done) => {
    try {
      done(null, text === '' ? undefined : parseJsonText(text));
    } catch (error) {
      done(error instanceof Error ? error : new Error(messageOf(error)), undefined);
    }
  });
  server.setReplySerializer((payload) => plainJson(JSON.stringify(payload)));

  server.setErrorHandler((error, request, reply) => {
    const { status, headers, body } = errorAnswer(error, () => request.log, request, options.keyOf);
    return reply.code(status).headers(headers).send(body);
  });

  server.setNotFoundHandler((request, reply) =>
    refuse(
      request,
      reply,
      new GatewayError('not_found', { message: `Unknown route: ${request.method} ${request.url.split('?')[0]}` }),
      options.keyOf,
    ),
  );

  return server;
}

/**
 * Errors Node's HTTP parser raises before there is a request (a request not received in time, headers too large,
 * bytes that are not HTTP): the contract's envelope written on the socket, which then closes.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex, log: FastifyBaseLogger): void {
  if (error.code === 'ECONNRESET' || error.code === 'EPIPE') return void socket.destroy();
  const gatewayError =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? new GatewayError('request_timeout')
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? new GatewayError('headers_too_large')
        : new GatewayError('invalid_request', { message: 'The request is not valid HTTP' });
  // No request (and so no request id) exists yet.
  log.info({ status: gatewayError.status, code: gatewayError.code, message: gatewayError.message }, 'request refused');
  // A net.Socket counts what it wrote; a Duplex need not.
  if (socket.writable && !('bytesWritten' in socket && socket.bytesWritten)) {
    const body = JSON.stringify(errorEnvelope(gatewayError));
    const advice = Object.entries(retryAdvice(gatewayError)).map(([name, value]) => `${name}: ${value}\r\n`);
    socket.write(
      `HTTP/1.1 ${gatewayError.status} ${STATUS_CODES[gatewayError.status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `${advice.join('')}Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/** Answers a request Fastify refused before any route ran (unknown route, malformed URL), with its log line. */
function refuse(request: FastifyRequest, reply: FastifyReply, error: GatewayError, keyOf?: KeyOfRequest): FastifyReply {
  logRefusal(request.log, error, request, keyOf);
  return sendError(reply, error);
}

export function sendError(reply: FastifyReply, error: GatewayError): FastifyReply {
  const { status, headers, body } = errorResponse(error);
  return reply.code(status).headers(headers).send(body);
}

/** A server span per request; the rest of the request's lifecycle runs in its context. */
function traceRequests(server: FastifyInstance): void {
  server.addHook('onRequest', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const context = traceRequest(
      reply.raw,
      request.method,
      route,
      request.url.split('?')[0]!,
      request.headers,
      request.id,
    );
    if (!context) return done();
    runInContext(context, done);
  });
}

/**
 * Connections that have not sent a request yet. Node's `close()` closes only idle connections that have served a
 * request, and a client's spare connection (undici opens some, and keeps them 4 s) would hold a graceful stop until
 * the client drops it: these are destroyed when the server starts closing.
 */
function unusedConnections() {
  const sockets = new Set<Duplex>();
  return {
    opened: (socket: Duplex) => {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
    },
    used: (socket: Duplex) => void sockets.delete(socket),
    destroyAll: () => {
      for (const socket of sockets) socket.destroy();
    },
  };
}
