/** IPv6 addresses that carry an IPv4 address, in every embedding form a webhook URL or DNS answer could use. */

/** Each embeds a loopback, private, link-local or metadata IPv4 address (or is a local-use prefix). */
export const EMBEDDING_PRIVATE_IPV4 = [
  '::127.0.0.1', // IPv4-compatible, dotted
  '::7f00:1', // IPv4-compatible, hex
  '::a9fe:a9fe', // IPv4-compatible 169.254.169.254
  '::ffff:7f00:1', // IPv4-mapped, hex
  '::ffff:0:7f00:1', // IPv4-translated (RFC 6145)
  '64:ff9b::7f00:1', // NAT64 well-known prefix
  '64:ff9b::10.0.0.1', // NAT64, dotted
  '64:ff9b::a9fe:a9fe', // NAT64 to the metadata address
  '64:ff9b:1::808:808', // local-use NAT64 prefix (RFC 8215): never public
  '2002:7f00:1::1', // 6to4 of 127.0.0.1
  '2002:c0a8:101::1', // 6to4 of 192.168.1.1
  '2001:0:4136:e378:8000:63bf:f5ff:fffe', // Teredo, client 10.0.0.1
  '2001:0:a00:1:8000:63bf:f7f7:f7f7', // Teredo, server 10.0.0.1
  '2606:4700::5efe:7f00:1', // ISATAP interface id, 127.0.0.1
  '2606:4700::200:5efe:a00:1', // ISATAP interface id, 10.0.0.1
];

/** The same forms around public IPv4 addresses (8.8.8.8, 65.54.227.120). */
export const EMBEDDING_PUBLIC_IPV4 = [
  '::ffff:8.8.8.8',
  '64:ff9b::808:808',
  '2002:808:808::1',
  '2001:0:4136:e378:8000:63bf:f7f7:f7f7',
];
