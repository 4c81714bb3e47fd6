import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const PROCESS_PREFIX = randomBytes(6).toString('hex');
let requestCounter = 0;

/**
 * The caller's `x-request-id` when it is a sane one, else a new id: unique across replicas (random per process)
 * and cheap (no random bytes per request).
 */
export function requestIdFor(headers: IncomingHttpHeaders): string {
  const incoming = headers['x-request-id'];
  if (typeof incoming === 'string' && REQUEST_ID.test(incoming)) return incoming;
  return `req_${PROCESS_PREFIX}${(requestCounter++).toString(36).padStart(8, '0')}`;
}
