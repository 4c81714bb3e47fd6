/**
 * Errors in Anthropic's envelope, `{"type":"error","error":{"type":...,"message":...}}`, with the statuses its SDK
 * maps to its own error classes. The status and headers (`retry-after`, rate limits) stay the gateway's.
 */
import type { AnthropicErrorBody } from '../../wire/index.js';

export type { AnthropicErrorBody };
const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  502: 'api_error',
  503: 'overloaded_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

/** Anthropic's error type for an HTTP status. */
export function anthropicErrorType(status: number): string {
  return ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
}

export function anthropicErrorBody(status: number, message: string): AnthropicErrorBody {
  return { type: 'error', error: { type: anthropicErrorType(status), message } };
}
