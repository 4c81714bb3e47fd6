/** Whose key a request carried, for the log line of a refusal: from `Authorization`, or Anthropic's `x-api-key`. */
import { authorizationOf } from '../gateway/index.js';
import { singleHeader } from './client-signal.js';
import type { HttpDeps } from './deps.js';
import type { KeyOfRequest } from './edge.js';

export function keyOfRequest(deps: Pick<HttpDeps, 'auth'>): KeyOfRequest {
  return (headers) => deps.auth.known(authorizationOf(headers.authorization, singleHeader(headers['x-api-key'])));
}
