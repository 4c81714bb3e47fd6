/**
 * Every public error of the gateway: the contract's table in code. Everything else throws a GatewayError
 * with one of these codes; `http/` renders the envelope in exactly one place.
 */
export type ErrorCode =
  | 'invalid_request'
  | 'missing_api_key'
  | 'invalid_api_key'
  | 'insufficient_credits'
  | 'permission_denied'
  | 'model_not_found'
  | 'not_found'
  | 'request_too_large'
  | 'request_timeout'
  | 'headers_too_large'
  | 'context_length_exceeded'
  | 'rate_limit_exceeded'
  | 'daily_limit_exceeded'
  | 'upstream_error'
  | 'model_unavailable'
  | 'service_unavailable'
  | 'upstream_timeout'
  | 'internal_error'
  | 'idempotency_key_in_use'
  | 'idempotency_key_reused'
  | 'not_signed_in'
  | 'invalid_credentials'
  | 'payment_method_required'
  | 'key_expired'
  | 'ip_not_allowed'
  | 'key_limit_exceeded';

interface ErrorDefinition {
  status: number;
  type: string;
  message: string;
}

export const ERROR_CATALOGUE: Record<ErrorCode, ErrorDefinition> = {
  invalid_request: { status: 400, type: 'invalid_request_error', message: 'Invalid request' },
  missing_api_key: { status: 401, type: 'authentication_error', message: 'No API key provided' },
  invalid_api_key: { status: 401, type: 'authentication_error', message: 'Invalid API key provided' },
  insufficient_credits: {
    status: 402,
    type: 'payment_required',
    message: 'Insufficient credits. Please add credits to continue.',
  },
  permission_denied: {
    status: 403,
    type: 'permission_error',
    message: 'This API key does not have permission for this operation',
  },
  model_not_found: { status: 404, type: 'invalid_request_error', message: 'The model does not exist' },
  not_found: { status: 404, type: 'invalid_request_error', message: 'Not found' },
  request_too_large: { status: 413, type: 'invalid_request_error', message: 'Request body is too large' },
  request_timeout: {
    status: 408,
    type: 'invalid_request_error',
    message: 'The request was not received in time (headers and body must arrive within server.request_timeout_ms)',
  },
  headers_too_large: { status: 431, type: 'invalid_request_error', message: 'The request headers are too large' },
  context_length_exceeded: {
    status: 400,
    type: 'invalid_request_error',
    message: "This request exceeds the model's maximum context length",
  },
  // Key governance (docs/api.md#key-governance): a key's own expiry, addresses and spend limit.
  key_expired: { status: 403, type: 'permission_error', message: 'This API key has expired' },
  ip_not_allowed: {
    status: 403,
    type: 'permission_error',
    message: "This API key may not be used from this address (see the key's allowed_ips)",
  },
  key_limit_exceeded: { status: 403, type: 'permission_error', message: 'This API key has reached its spend limit' },
  rate_limit_exceeded: { status: 429, type: 'rate_limit_error', message: 'Rate limit exceeded' },
  daily_limit_exceeded: { status: 429, type: 'rate_limit_error', message: 'Daily credit limit exceeded' },
  upstream_error: { status: 502, type: 'upstream_error', message: 'The upstream provider failed' },
  model_unavailable: { status: 503, type: 'service_unavailable', message: 'The model is currently unavailable' },
  service_unavailable: { status: 503, type: 'service_unavailable', message: 'The service is temporarily unavailable' },
  upstream_timeout: { status: 504, type: 'upstream_error', message: 'The upstream provider did not answer in time' },
  internal_error: { status: 500, type: 'server_error', message: 'Internal server error' },
  // Idempotency-Key on chat requests (docs/api.md#idempotent-requests).
  idempotency_key_in_use: {
    status: 409,
    type: 'invalid_request_error',
    message: 'A request with this Idempotency-Key is still in progress; retry shortly to get its answer',
  },
  idempotency_key_reused: {
    status: 422,
    type: 'invalid_request_error',
    message: 'This Idempotency-Key was already used with a different request',
  },
  // The dashboard's session API (docs/dashboard.md).
  not_signed_in: { status: 401, type: 'authentication_error', message: 'Sign in to continue' },
  invalid_credentials: { status: 401, type: 'authentication_error', message: 'Incorrect email or password' },
  // Turning on auto-recharge (docs/payments.md#auto-recharge-by-card).
  payment_method_required: {
    status: 400,
    type: 'invalid_request_error',
    message: 'A saved payment method is required',
  },
};

export interface ErrorOptions {
  message?: string;
  param?: string | null;
  /** Whole seconds; only for the 429 codes. */
  retryAfter?: number;
  /** Extra response headers (rate-limit headers on a 429). */
  headers?: Record<string, string>;
  cause?: unknown;
}

export class GatewayError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly type: string;
  readonly param: string | null;
  readonly retryAfter: number | undefined;
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, options: ErrorOptions = {}) {
    const definition = ERROR_CATALOGUE[code];
    super(options.message ?? definition.message, { cause: options.cause });
    this.name = 'GatewayError';
    this.code = code;
    this.status = definition.status;
    this.type = definition.type;
    this.param = options.param ?? null;
    this.retryAfter = options.retryAfter;
    this.headers = options.headers ?? {};
    if (options.retryAfter !== undefined) this.headers['retry-after'] = String(options.retryAfter);
  }
}

export interface ErrorEnvelope {
  error: { message: string; type: string; code: string; param: string | null; retry_after?: number };
}

export function errorEnvelope(error: GatewayError): ErrorEnvelope {
  const body: ErrorEnvelope['error'] = {
    message: error.message,
    type: error.type,
    code: error.code,
    param: error.param,
  };
  if (error.retryAfter !== undefined) body.retry_after = error.retryAfter;
  return { error: body };
}

export function invalidRequest(message: string, param: string | null = null): GatewayError {
  return new GatewayError('invalid_request', { message, param });
}

/** The message of anything thrown: an Error's own, anything else turned into text. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
