/**
 * The IPv4 addresses an IPv6 address carries: traffic to such an address can end at that IPv4 address (through
 * the host's own stack, a NAT64 gateway or a tunnel relay), so it is no more public than the addresses it embeds.
 */
import ipaddr from 'ipaddr.js';

/** Transition ranges (ipaddr.js names) that are routable only because of the IPv4 address they embed. */
export const TRANSLATION_RANGES: ReadonlySet<string> = new Set(['ipv4Mapped', 'rfc6145', 'rfc6052', '6to4', 'teredo']);

/** The embedded IPv4 addresses, or none for an address that embeds none. */
export function embeddedIPv4(ip: ipaddr.IPv6): ipaddr.IPv4[] {
  const p = ip.parts;
  const zeros = (from: number, to: number) => p.slice(from, to).every((part) => part === 0);
  const last = ipv4(p[6]!, p[7]!);
  // IPv4-compatible ::a.b.c.d (deprecated, RFC 4291) and IPv4-mapped ::ffff:a.b.c.d
  if (zeros(0, 5) && (p[5] === 0 || p[5] === 0xffff)) return [last];
  // IPv4-translated ::ffff:0:a.b.c.d (RFC 6145)
  if (zeros(0, 4) && p[4] === 0xffff && p[5] === 0) return [last];
  // NAT64 well-known prefix 64:ff9b::/96 (RFC 6052)
  if (p[0] === 0x64 && p[1] === 0xff9b && zeros(2, 6)) return [last];
  // 6to4 2002:AABB:CCDD::/48 (RFC 3056)
  if (p[0] === 0x2002) return [ipv4(p[1]!, p[2]!)];
  // Teredo 2001:0:<server>:<flags>:<port>:<client XOR ffff:ffff> (RFC 4380)
  if (p[0] === 0x2001 && p[1] === 0) return [ipv4(p[2]!, p[3]!), ipv4(p[6]! ^ 0xffff, p[7]! ^ 0xffff)];
  // ISATAP interface identifier ::0:5efe:a.b.c.d or ::200:5efe:a.b.c.d in any /64 (RFC 5214)
  if ((p[4]! & 0xfcff) === 0 && p[5] === 0x5efe) return [last];
  return [];
}

function ipv4(high: number, low: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}
