/**
 * A key's `allowed_ips`: CIDRs (IPv4 and IPv6; a bare address is a /32 or /128) parsed by ipaddr.js, and whether
 * a client address is inside one. An IPv4-mapped IPv6 address (`::ffff:10.0.0.1`, how a dual-stack socket reports
 * an IPv4 client) is matched as the IPv4 address it carries.
 */
import ipaddr from 'ipaddr.js';

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

/** The CIDR in its canonical form (`10.0.0.0/8`, `2001:db8::/32`), or undefined when it is not one. */
export function canonicalCidr(text: string): string | undefined {
  const trimmed = text.trim();
  try {
    const [address, bits] = trimmed.includes('/') ? ipaddr.parseCIDR(trimmed) : wholeAddress(trimmed);
    const network = networkOf(address, bits);
    return `${network.toString()}/${bits}`;
  } catch {
    return undefined;
  }
}

/** Whether `ip` is inside one of `cidrs` (canonical, as stored); an empty list allows every address. */
export function addressAllowed(ip: string | undefined, cidrs: readonly string[]): boolean {
  if (cidrs.length === 0) return true;
  if (!ip || !ipaddr.isValid(ip)) return false;
  let address = ipaddr.parse(ip);
  if (address.kind() === 'ipv6' && (address as ipaddr.IPv6).isIPv4MappedAddress())
    address = (address as ipaddr.IPv6).toIPv4Address();
  return cidrs.some((cidr) => {
    const range = rangeOf(cidr);
    return range !== undefined && range[0].kind() === address.kind() && address.match(range);
  });
}

const ranges = new Map<string, Range | undefined>();

function rangeOf(cidr: string): Range | undefined {
  if (!ranges.has(cidr)) {
    let range: Range | undefined;
    try {
      range = ipaddr.parseCIDR(cidr);
    } catch {
      range = undefined;
    }
    if (ranges.size > 10_000) ranges.clear();
    ranges.set(cidr, range);
  }
  return ranges.get(cidr);
}

function wholeAddress(text: string): Range {
  const address = ipaddr.parse(text);
  return [address, address.kind() === 'ipv4' ? 32 : 128];
}

function networkOf(address: ipaddr.IPv4 | ipaddr.IPv6, bits: number): ipaddr.IPv4 | ipaddr.IPv6 {
  return address.kind() === 'ipv4'
    ? ipaddr.IPv4.networkAddressFromCIDR(`${address.toString()}/${bits}`)
    : ipaddr.IPv6.networkAddressFromCIDR(`${address.toString()}/${bits}`);
}
