import { traceHeaders, tracingEnabled } from '../observability/index.js';

/** The configured headers, `accept`, OpenAI's header for a caller's request id, and `traceparent` when tracing. */
export function requestHeaders(base: Record<string, string>, accept: string, requestId: string | undefined): Record<string, string> {
  const headers: Record<string, string> = { ...base, accept };
  if (requestId) headers['x-client-request-id'] = requestId;
  return tracingEnabled() ? Object.assign(headers, traceHeaders()) : headers;
}
