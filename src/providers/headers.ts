import { traceHeaders, tracingEnabled } from '../observability/index.js';

/**
 * The configured headers, `accept`, OpenAI's header for a caller's request id, and `traceparent` when tracing,
 * as undici's flat name/value list (cheaper for it to walk than an object, and no object copy per request).
 */
export function requestHeaders(base: string[], accept: string, requestId: string | undefined): string[] {
  const headers = base.concat('accept', accept);
  if (requestId) headers.push('x-client-request-id', requestId);
  if (tracingEnabled()) for (const [name, value] of Object.entries(traceHeaders())) headers.push(name, value);
  return headers;
}

/** Headers as the flat list `requestHeaders` extends. */
export function headerList(headers: Record<string, string>): string[] {
  return Object.entries(headers).flat();
}
