/** CORS for browser clients of `/v1` (off unless origins are configured; never for `/admin`). */
const ALLOW_HEADERS = 'authorization, content-type, x-request-id, idempotency-key';
const EXPOSE_HEADERS =
  'x-request-id, x-ratelimit-limit-requests, x-ratelimit-remaining-requests, x-ratelimit-reset-requests, x-ratelimit-limit-tokens, x-ratelimit-remaining-tokens, x-ratelimit-reset-tokens, retry-after, x-should-retry';

/** The CORS headers of a response to `origin`, or undefined when that origin gets none. */
export function corsHeaders(
  allowed: string[],
  origin: string | undefined,
  url: string,
): Record<string, string> | undefined {
  if (!origin || allowed.length === 0 || url.startsWith('/admin')) return undefined;
  if (!allowed.includes('*') && !allowed.includes(origin)) return undefined;
  return {
    'access-control-allow-origin': allowed.includes('*') ? '*' : origin,
    vary: 'Origin',
    'access-control-allow-headers': ALLOW_HEADERS,
    'access-control-allow-methods': 'GET, POST, OPTIONS',
    'access-control-expose-headers': EXPOSE_HEADERS,
  };
}
