/**
 * What makes an authenticated key unusable for a request, checked on every /v1 route that takes a key, before its
 * permission for the operation: its owner left the account (401), it expired, it is used from outside its
 * `allowed_ips`, or its owner's role may no longer give its permission (403). A key without an owner (made by the
 * operator) acts for the account's owner.
 */
import { addressAllowed, keyPermissionsOf } from '../auth/index.js';
import { GatewayError } from '../errors/index.js';
import type { KeyRecord } from '../storage/index.js';

export function requireKeyUsable(key: KeyRecord, clientIp: string | undefined, now = Date.now()): void {
  if (key.ownerUserId !== null && key.ownerRole === null)
    throw new GatewayError('invalid_api_key', {
      message: "This API key's owner is no longer a member of the account",
    });
  if (key.expiresAt !== null && key.expiresAt <= now)
    throw new GatewayError('key_expired', {
      message: `This API key expired at ${new Date(key.expiresAt).toISOString()}`,
    });
  if (!addressAllowed(clientIp, key.allowedIps))
    throw new GatewayError('ip_not_allowed', {
      message: `This API key may not be used from ${clientIp ?? 'an unknown address'} (see the key's allowed_ips)`,
    });
  if (key.ownerRole !== null && !keyPermissionsOf(key.ownerRole).includes(key.permissions))
    throw new GatewayError('permission_denied', {
      message: `This API key (${key.permissions}) is owned by a member whose role (${key.ownerRole}) may not use such a key`,
    });
}
