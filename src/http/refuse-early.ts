/**
 * Fastify's `onRequest` hook for the metered routes it serves: a large body's key and rate limits are checked
 * before the body is read, as the chat endpoint does, so a request they refuse costs no reading or parsing.
 */
import type { FastifyRequest, onRequestAsyncHookHandler } from 'fastify';
import { refuseBeforeReading, type AdmitDeps } from '../gateway/index.js';
import { declaredBytes } from './json-body.js';

export function refuseLargeBodyEarly(
  deps: AdmitDeps,
  authorizationOf: (request: FastifyRequest) => string | undefined = (request) => request.headers.authorization,
): onRequestAsyncHookHandler {
  return async (request) => {
    const credentials = { authorization: authorizationOf(request), clientIp: request.ip };
    await refuseBeforeReading(deps, credentials, declaredBytes(request.headers['content-length']));
  };
}
