/**
 * The client's address for a request answered ahead of Fastify (the chat endpoint), as Fastify's `request.ip`
 * gives it for the others: the socket's peer, or behind `server.trust_proxy` (every hop trusted) the first address
 * of `X-Forwarded-For`.
 */
import type { IncomingMessage } from 'node:http';

export function clientAddress(req: IncomingMessage, trustProxy = false): string | undefined {
  if (trustProxy) {
    const forwarded = req.headers['x-forwarded-for'];
    const first = (Array.isArray(forwarded) ? forwarded.join(',') : forwarded)?.split(',')[0]?.trim();
    if (first) return first;
  }
  return req.socket.remoteAddress;
}
