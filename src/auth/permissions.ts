/** The contract's permission table, extended with `management` keys: what each kind of key may do. */
import { GatewayError } from '../errors/index.js';
import type { KeyRecord, Permission as StoredPermission } from '../storage/index.js';

/** Every kind of key, in the order the API documents them: the request and answer schemas, the CLI and the role table. */
export const PERMISSIONS = ['full', 'read_only', 'project', 'management'] as const;
export type Permission = (typeof PERMISSIONS)[number];

// Storage spells the column's values too (it imports nothing above it): this stops compiling when the two differ.
type Holds<T extends true> = T;
type _SameAsStored = Holds<[Permission, StoredPermission] extends [StoredPermission, Permission] ? true : false>;

/** `full, read_only, project or management`, for help and error messages. */
export const PERMISSION_CHOICES = PERMISSIONS.join(', ').replace(/, (?=[^,]*$)/, ' or ');

export function isPermission(value: unknown): value is Permission {
  return typeof value === 'string' && (PERMISSIONS as readonly string[]).includes(value);
}

/**
 * `chat`: call models; `models`, `credits`: read the catalog and the balance; `manage`: webhooks and purchases;
 * `keys`: the account's other keys over /v1/keys; `audit`: the audit log.
 */
export type Operation = 'chat' | 'models' | 'credits' | 'manage' | 'keys' | 'audit';

const ALLOWED: Record<Permission, readonly Operation[]> = {
  full: ['chat', 'models', 'credits', 'manage', 'keys', 'audit'],
  read_only: ['models', 'credits'],
  project: ['chat', 'models', 'credits'],
  // A provisioning key: it manages keys and reads the audit log, and never calls a model.
  management: ['models', 'credits', 'keys', 'audit'],
};

export function requirePermission(key: KeyRecord, operation: Operation): void {
  if (!ALLOWED[key.permissions].includes(operation)) {
    throw new GatewayError('permission_denied', {
      message: `This API key (${key.permissions}) does not have permission for this operation`,
    });
  }
}

/** Project keys may use only the models of their allow-list (empty = all); matched on id or alias. */
export function requireModelAllowed(key: KeyRecord, names: readonly string[]): void {
  if (key.permissions !== 'project' || key.models.length === 0) return;
  if (names.some((name) => key.models.includes(name))) return;
  throw new GatewayError('permission_denied', {
    message: `This API key may not use model ${names[0]}`,
    param: 'model',
  });
}

/** Whether GET /credits shows this key the full form or only `object` and `balance`. */
export function seesFullCredits(key: KeyRecord): boolean {
  return key.permissions === 'full';
}
