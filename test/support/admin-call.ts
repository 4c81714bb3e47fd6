/**
 * HTTP calls to a test gateway with a bearer token. The body is parsed as JSON when it is JSON; otherwise (/metrics,
 * an event stream) it is the text, which `text` always holds.
 */
export interface ApiAnswer {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

/** One call to `baseUrl` + `path`, with `token` as the bearer (none when undefined) and `body` sent as JSON. */
export async function apiCall(
  baseUrl: string,
  token: string | undefined,
  method: string,
  path: string,
  body?: unknown,
  send: typeof fetch = fetch,
): Promise<ApiAnswer> {
  const response = await send(`${baseUrl}${path}`, {
    method,
    headers: {
      ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: response.status, headers: response.headers, body: parsed, text };
}

/** One admin API call with the admin token. */
export function adminCall(
  baseUrl: string,
  adminToken: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<ApiAnswer> {
  return apiCall(baseUrl, adminToken, method, path, body);
}
