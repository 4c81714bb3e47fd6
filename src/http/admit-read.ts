import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Operation } from '../auth/index.js';
import { admit } from '../gateway/index.js';
import type { KeyRecord } from '../storage/index.js';
import type { HttpDeps } from './deps.js';

/** Admission of a read endpoint's request (gateway/admit.ts), its rate-limit headers set on the reply. */
export async function admitRead(
  deps: HttpDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  operation: Operation,
): Promise<KeyRecord> {
  const credentials = { authorization: request.headers.authorization, clientIp: request.ip };
  const { key, headers } = await admit(deps, credentials, operation);
  reply.headers(headers);
  return key;
}
