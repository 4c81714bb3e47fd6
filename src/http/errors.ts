/** Every error an HTTP answer can carry, turned into the contract's envelope and status. */
import type { FastifyError } from 'fastify';
import { GatewayError, errorEnvelope, type ErrorEnvelope } from '../errors/index.js';
import { pointerToParam } from '../gateway/schema.js';
import { isStorageUnavailable } from '../storage/index.js';

/**
 * 429s that an automatic retry cannot fix within any sensible wait: `daily_limit_exceeded` says "retry after
 * midnight UTC" (hours), and the openai SDKs sleep for whatever Retry-After says unless `x-should-retry: false`.
 */
const DO_NOT_RETRY: ReadonlySet<string> = new Set(['daily_limit_exceeded']);

export function errorResponse(error: GatewayError): {
  status: number;
  headers: Record<string, string>;
  body: ErrorEnvelope;
} {
  const headers = DO_NOT_RETRY.has(error.code) ? { ...error.headers, 'x-should-retry': 'false' } : error.headers;
  return { status: error.status, headers, body: errorEnvelope(error) };
}

/**
 * An error raised while serving an HTTP request (Fastify's, the body reader's, a route's) in the contract's
 * terms. Upstream failures arrive here already mapped (routing's `fromUpstream`).
 */
export function fromFastify(thrown: unknown): GatewayError {
  if (thrown instanceof GatewayError) return thrown;
  const error = thrown as FastifyError;
  if (error.validation && error.validation.length > 0) {
    const first = error.validation[0]!;
    const { missingProperty: missing, additionalProperty: unknown } = first.params as {
      missingProperty?: string;
      additionalProperty?: string;
    };
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
      return new GatewayError('request_too_large', { message: BODY_TOO_LARGE });
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new GatewayError('invalid_request', {
        message: `We could not parse the JSON body of your request: ${error.message}`,
      });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new GatewayError('invalid_request', { message: NOT_JSON });
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new GatewayError('invalid_request', { message: LENGTH_MISMATCH });
  }
  if (error instanceof SyntaxError || error.statusCode === 400) {
    return new GatewayError('invalid_request', { message: `Invalid request: ${error.message}` });
  }
  if (error.statusCode === 413) return new GatewayError('request_too_large');
  if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
    return new GatewayError('invalid_request', { message: error.message });
  }
  if (isStorageUnavailable(error)) {
    return new GatewayError('service_unavailable', {
      message: 'The database is unavailable; try again shortly',
      cause: error,
    });
  }
  return new GatewayError('internal_error', { cause: error });
}

export const BODY_TOO_LARGE = 'Request body is larger than the configured limit';
export const NOT_JSON = 'Content-Type must be application/json';
export const LENGTH_MISMATCH = 'Content-Length does not match the body';
