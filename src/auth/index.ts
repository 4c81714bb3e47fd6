export { Authenticator, type AuthenticatorOptions } from './authenticator.js';
export { generateKey, hashKey, keyHint, keyPattern } from './keys.js';
export {
  PERMISSIONS,
  PERMISSION_CHOICES,
  isPermission,
  requireModelAllowed,
  requirePermission,
  seesFullCredits,
  type Operation,
  type Permission,
} from './permissions.js';
export { addressAllowed, canonicalCidr } from './addresses.js';
export { ROLES, can, capabilitiesOf, isRole, keyPermissionsOf, requireCapability, type Capability } from './roles.js';
export { keyLimitStatus, type KeyLimitStatus } from './key-limit.js';
