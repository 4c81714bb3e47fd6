/**
 * SSRF safety: a webhook URL is resolved once per delivery, every address it resolves to must be public unicast
 * (unless the operator allows private URLs), and the connection is then made to that very address, so a DNS
 * answer that changes between the check and the connection cannot point the request inside.
 */
import { lookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';
import { embeddedIPv4, TRANSLATION_RANGES } from './embedded-ipv4.js';

export interface Target {
  address: string;
  family: 4 | 6;
}

export class BlockedAddressError extends Error {
  constructor(host: string, address: string) {
    super(`${host} resolves to ${address}, a loopback, private, link-local or otherwise non-public address`);
    this.name = 'BlockedAddressError';
  }
}

/**
 * Only public unicast addresses pass: loopback, RFC 1918, CGNAT, link-local (and with it the cloud metadata
 * address 169.254.169.254), unique-local IPv6 (fd00:ec2::254), multicast, reserved and documentation ranges do
 * not. An IPv6 address that embeds IPv4 addresses (mapped, compatible, translated, NAT64 64:ff9b::/96, 6to4,
 * Teredo, ISATAP) passes only if every embedded address does; the local-use NAT64 prefix 64:ff9b:1::/48 never.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  const ip = ipaddr.parse(address);
  if (ip instanceof ipaddr.IPv4) return ip.range() === 'unicast';
  const carried = embeddedIPv4(ip);
  const range = ip.range();
  const routable = range === 'unicast' || (carried.length > 0 && TRANSLATION_RANGES.has(range));
  return routable && carried.every((v4) => v4.range() === 'unicast');
}

/** Resolves the URL's host once; throws BlockedAddressError (or the DNS error). */
export async function resolveTarget(url: URL, allowPrivate: boolean): Promise<Target> {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const answers = ipaddr.isValid(host)
    ? [{ address: host, family: ipaddr.parse(host).kind() === 'ipv6' ? 6 : 4 }]
    : await lookup(host, { all: true, verbatim: true });
  if (answers.length === 0) throw Object.assign(new Error(`${host} has no address`), { code: 'ENOTFOUND' });
  if (!allowPrivate) {
    // Every answer must be public: a name that also resolves inside is refused entirely.
    const blocked = answers.find((answer) => !isPublicAddress(answer.address));
    if (blocked) throw new BlockedAddressError(host, blocked.address);
  }
  const first = answers[0]!;
  return { address: first.address, family: first.family === 6 ? 6 : 4 };
}
