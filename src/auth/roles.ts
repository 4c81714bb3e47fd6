/**
 * What each member role may do in its account, and which keys it may make. One table for the dashboard, the
 * `/v1` routes (through the key's owner) and the admin-facing docs.
 */
import { GatewayError } from '../errors/index.js';
import type { Role } from '../storage/index.js';
import { PERMISSIONS, type Permission } from './permissions.js';

/**
 * - `members`: invite, remove, change roles (owners alone touch owners).
 * - `keys`: every key of the account; `own_keys`: the keys one made.
 * - `webhooks`, `settings` (limits, low-balance thresholds), `billing` (purchases, receipts, auto-recharge),
 *   `usage` (usage, ledger, request details), `audit` (the audit log), `delete` (the account itself).
 */
export type Capability =
  'members' | 'keys' | 'own_keys' | 'webhooks' | 'settings' | 'billing' | 'usage' | 'audit' | 'delete';

export const ROLES: readonly Role[] = ['owner', 'admin', 'member', 'billing'];

const CAPABILITIES: Record<Role, readonly Capability[]> = {
  owner: ['members', 'keys', 'own_keys', 'webhooks', 'settings', 'billing', 'usage', 'audit', 'delete'],
  admin: ['members', 'keys', 'own_keys', 'webhooks', 'settings', 'usage', 'audit'],
  member: ['own_keys', 'usage'],
  billing: ['billing', 'usage'],
};

/** The permissions a key made by (or owned by) a member of `role` may have. */
const KEY_PERMISSIONS: Record<Role, readonly Permission[]> = {
  owner: PERMISSIONS,
  admin: PERMISSIONS,
  member: ['project', 'read_only'],
  billing: [],
};

export function can(role: Role, capability: Capability): boolean {
  return CAPABILITIES[role].includes(capability);
}

export function capabilitiesOf(role: Role): readonly Capability[] {
  return CAPABILITIES[role];
}

/** 403 unless `role` has `capability`. */
export function requireCapability(role: Role, capability: Capability): void {
  if (!can(role, capability))
    throw new GatewayError('permission_denied', {
      message: `Your role in this account (${role}) does not allow this (${capability.replace('_', ' ')})`,
    });
}

export function keyPermissionsOf(role: Role): readonly Permission[] {
  return KEY_PERMISSIONS[role];
}

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}
