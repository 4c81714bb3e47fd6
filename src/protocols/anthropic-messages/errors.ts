/**
 * Errors in Anthropic's envelope, `{"type":"error","error":{"type":...,"message":...}}`, with the statuses its SDK
 * maps to its own error classes. The status and headers (`retry-after`, rate limits) stay the gateway's.
 */
import { ANTHROPIC_ERROR_STATUS, type AnthropicErrorBody } from '../../wire/index.js';

export type { AnthropicErrorBody };

/** The error type for each status: Anthropic's table read backwards, and the 5xx statuses it does not name. */
const ERROR_TYPES: Readonly<Record<number, string>> = {
  ...Object.fromEntries(Object.entries(ANTHROPIC_ERROR_STATUS).map(([type, status]) => [status, type])),
  502: 'api_error',
  503: 'overloaded_error',
};

/** Anthropic's error type for an HTTP status. */
export function anthropicErrorType(status: number): string {
  return ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
}

export function anthropicErrorBody(status: number, message: string): AnthropicErrorBody {
  return { type: 'error', error: { type: anthropicErrorType(status), message } };
}
