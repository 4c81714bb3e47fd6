/**
 * What every HTTP request gets, whichever server answers it (the chat endpoint ahead of Fastify, or Fastify's
 * hooks and error handler): its request id, CORS headers, request metrics, a server span, and errors in the
 * contract's envelope. Written on the raw response, so it costs the chat endpoint no Fastify objects.
 */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type { Context } from '@opentelemetry/api';
import type { FastifyBaseLogger } from 'fastify';
import type { ErrorEnvelope, GatewayError } from '../errors/index.js';
import type { KeyRecord } from '../storage/index.js';
import { endSpan, startServerSpan, type Metrics } from '../observability/index.js';
import { corsHeaders } from './cors.js';
import { errorResponse, fromFastify } from './errors.js';

export interface EdgeOptions {
  metrics: Metrics;
  corsOrigins: string[];
}

/**
 * Sets the request id and the CORS headers of the request's origin, and records the request's metrics when its
 * response closes (so streamed answers count when their last byte leaves). Returns whether CORS headers were set.
 */
export function openRequest(
  options: EdgeOptions,
  res: ServerResponse,
  requestId: string,
  headers: IncomingHttpHeaders,
  url: string,
  route: string,
): boolean {
  res.setHeader('x-request-id', requestId);
  const started = performance.now();
  res.once('close', () => options.metrics.recordRequest(route, res.statusCode, (performance.now() - started) / 1000));
  const cors = corsHeaders(options.corsOrigins, headers.origin, url);
  if (!cors) return false;
  for (const name in cors) res.setHeader(name, cors[name]!);
  return true;
}

/**
 * A server span for the request (continuing an incoming `traceparent`), ended when its response closes. Returns
 * the context the rest of the request runs in, so the gateway's own spans become its children; undefined when
 * tracing is off.
 */
export function traceRequest(
  res: ServerResponse,
  method: string,
  route: string,
  path: string,
  headers: IncomingHttpHeaders,
  requestId: string,
): Context | undefined {
  const started = startServerSpan(`${method} ${route}`, headers, {
    'http.request.method': method,
    'http.route': route,
    'url.path': path,
    'tollgate.request_id': requestId,
  });
  if (!started) return undefined;
  res.once('close', () => endSpan(started.span, res.statusCode));
  return started.context;
}

/** What an error's log line says of its request: where it went, and whose key it carried. */
export interface ErrorScene {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
}

/** The key a request carried, as the authenticator last saw it (undefined when unknown). */
export type KeyOfRequest = (headers: IncomingHttpHeaders) => KeyRecord | undefined;

/**
 * The answer to an error thrown while serving a request, logged: a refusal (4xx) with its reason, a server fault
 * (5xx) with its cause.
 */
export function errorAnswer(
  error: unknown,
  log: () => FastifyBaseLogger,
  scene: ErrorScene,
  keyOf: KeyOfRequest | undefined,
): { status: number; headers: Record<string, string>; body: ErrorEnvelope } {
  const gatewayError = fromFastify(error);
  if (gatewayError.status >= 500) log().error({ err: error, ...errorFields(gatewayError, scene) }, 'request failed');
  else logRefusal(log(), gatewayError, scene, keyOf);
  return errorResponse(gatewayError);
}

/**
 * The line a refused request leaves at the default level, so an operator can tell anyone why: status, code and
 * message, the route, and the key's and account's ids when the key is known (never the key).
 */
export function logRefusal(
  log: FastifyBaseLogger,
  error: GatewayError,
  scene: ErrorScene,
  keyOf: KeyOfRequest | undefined,
): void {
  const key = keyOf?.(scene.headers);
  const who = key ? { key_id: key.id, account_id: key.accountId } : {};
  log.info({ ...errorFields(error, scene), ...who }, 'request refused');
}

function errorFields(error: GatewayError, scene: ErrorScene) {
  return {
    status: error.status,
    code: error.code,
    message: error.message,
    method: scene.method,
    path: scene.url.split('?')[0],
  };
}
