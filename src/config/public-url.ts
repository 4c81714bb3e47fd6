/**
 * The address the gateway builds absolute links on (Stripe Checkout's return, emailed verification and sign-in
 * links). A request's `Host` is chosen by whoever sends it, so it is never trusted as such: the configured
 * `server.public_url` wins; without it, the request's host only if the operator lists it in `server.public_hosts`,
 * or if it is a loopback address (a link there leads back to the machine that opens it: a gateway on a developer's
 * machine). docs/adr/0055-links-never-from-an-unchecked-host.md
 */
import type { Config } from './schema.js';

export interface RequestAddress {
  /** `http` or `https`, as the server saw the request (behind `server.trust_proxy`, the proxy's word). */
  protocol: string;
  /** The `Host` the request came with (behind `server.trust_proxy`, `X-Forwarded-Host`). */
  host: string;
}

/** `scheme://host[:port]` without a trailing slash, or undefined when the request's host may not be used. */
export function publicBase(server: Config['server'], request: RequestAddress): string | undefined {
  if (server.public_url) return server.public_url.replace(/\/$/, '');
  const host = request.host.toLowerCase();
  const listed = server.public_hosts.some((allowed) => allowed.toLowerCase() === host);
  if (!listed && !isLoopback(host)) return undefined;
  return `${request.protocol === 'https' ? 'https' : 'http'}://${host}`;
}

/** Why a link cannot be built for this request, and what the operator sets so it can. */
export function publicBaseMissing(what: string, request: RequestAddress): string {
  const host = JSON.stringify(request.host.slice(0, 100));
  return (
    `${what} is not available at this address: the gateway's public address is not configured. ` +
    `The operator sets TOLLGATE_PUBLIC_URL (server.public_url), or lists the host ${host} in ` +
    'TOLLGATE_PUBLIC_HOSTS (server.public_hosts)'
  );
}

/** `localhost`, `127.x.y.z` or `[::1]`, with an optional port. */
export function isLoopback(host: string): boolean {
  return /^(localhost|127\.\d{1,3}\.\d{1,3}\.\d{1,3}|\[::1\])(:\d{1,5})?$/.test(host);
}
