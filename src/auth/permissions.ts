/** The contract's permission table: what each kind of key may do. */
import { GatewayError } from '../errors/index.js';
import type { KeyRecord } from '../storage/index.js';

export type Operation = 'chat' | 'models' | 'credits' | 'manage';

export function requirePermission(key: KeyRecord, operation: Operation): void {
  const allowed =
    key.permissions === 'full' ||
    operation === 'models' ||
    operation === 'credits' ||
    (operation === 'chat' && key.permissions === 'project');
  if (!allowed) {
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
