/** Every error an HTTP answer can carry, turned into the contract's envelope and status. */
import type { FastifyError } from 'fastify';
import { GatewayError, errorEnvelope, type ErrorEnvelope } from '../errors/index.js';
import {
  childPointer,
  pointerDepth,
  unionMemberToReport,
  validationError,
  type SchemaFault,
} from '../errors/validation.js';
import { isStorageUnavailable } from '../storage/index.js';

/**
 * 429s that an automatic retry cannot fix within any sensible wait: `daily_limit_exceeded` says "retry after
 * midnight UTC" (hours).
 */
const DO_NOT_RETRY: ReadonlySet<string> = new Set(['daily_limit_exceeded']);
/**
 * The longest `Retry-After` a client is told to sit through by itself: a per-minute window's, not an hour's
 * (a throttled sign-up). Anthropic's SDK sleeps for whatever Retry-After it is given.
 */
const LONGEST_RETRY_WAIT_S = 120;
/** The wait suggested with a retryable error that names none (an upstream or the database failing). */
const DEFAULT_RETRY_AFTER_S = 1;

export function errorResponse(error: GatewayError): {
  status: number;
  headers: Record<string, string>;
  body: ErrorEnvelope;
} {
  return { status: error.status, headers: { ...error.headers, ...retryAdvice(error) }, body: errorEnvelope(error) };
}

/**
 * `x-should-retry`, which OpenAI's and Anthropic's SDKs (and Claude Code) obey before their own rules: false for
 * what the same request cannot get (bad input, key, credit, permission, route; a long wait), true with a
 * `Retry-After` for what a retry may get (a short rate-limit wait, a request in progress, a timeout, a 5xx).
 */
export function retryAdvice(error: GatewayError): Record<string, string> {
  const { status } = error;
  const retryable =
    status === 429
      ? !DO_NOT_RETRY.has(error.code) && (error.retryAfter ?? 0) <= LONGEST_RETRY_WAIT_S
      : status >= 500 || status === 408 || status === 409;
  if (!retryable) return { 'x-should-retry': 'false' };
  return { 'x-should-retry': 'true', 'retry-after': error.headers['retry-after'] ?? String(DEFAULT_RETRY_AFTER_S) };
}

/**
 * An error raised while serving an HTTP request (Fastify's, the body reader's, a route's) in the contract's
 * terms. Upstream failures arrive here already mapped (routing's `fromUpstream`).
 */
export function fromFastify(thrown: unknown): GatewayError {
  if (thrown instanceof GatewayError) return thrown;
  const error = thrown as FastifyError;
  if (error.validation && error.validation.length > 0) return validationError(ajvFault(error.validation));
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

/** One of ajv's errors, with the fields its `verbose` option adds (the server sets it). */
interface AjvError {
  keyword: string;
  instancePath: string;
  schemaPath: string;
  params: Record<string, unknown>;
  parentSchema?: unknown;
  data?: unknown;
}

/**
 * The fault to report among ajv's (which stops at the first failing keyword): the last error, since a union's
 * own error follows its members'; a union is reported as the fault of the member `unionMemberToReport` picks.
 */
function ajvFault(errors: readonly AjvError[]): SchemaFault {
  const last = errors.at(-1)!;
  if (last.keyword === 'anyOf' || last.keyword === 'oneOf') {
    const ofMember = (index: number) => errors.filter((e) => e.schemaPath.startsWith(`${last.schemaPath}/${index}/`));
    const index = unionMemberToReport(last.parentSchema, last.data, (i) => {
      const member = ofMember(i);
      return member.length ? Math.max(...member.map((e) => pointerDepth(pointerOf(e)))) : -1;
    });
    if (index !== undefined && ofMember(index).length) return ajvFault(ofMember(index));
  }
  const pointer = pointerOf(last);
  if (last.keyword === 'required') return { pointer, kind: 'missing' };
  if (last.keyword === 'additionalProperties') return { pointer, kind: 'unknown' };
  return { pointer, kind: 'invalid', schema: last.parentSchema };
}

/** Where the error is: a missing or unknown property's own place, not its object's. */
function pointerOf(error: AjvError): string {
  const property = error.params.missingProperty ?? error.params.additionalProperty;
  return typeof property === 'string' ? childPointer(error.instancePath, property) : error.instancePath;
}

export const BODY_TOO_LARGE = 'Request body is larger than the configured limit';
export const NOT_JSON = 'Content-Type must be application/json';
export const LENGTH_MISMATCH = 'Content-Length does not match the body';
