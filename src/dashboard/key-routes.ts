/**
 * The dashboard's keys: owners and admins see, make, change and revoke every key of the account (any permission,
 * `management` included); a `member` sees and manages only the keys it made, and makes only what its role may give
 * (src/auth/roles.ts); `billing` has no keys. Each change is audited as the signed-in user.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { CreateKeySchema, PatchKeySchema, type KeyAuthor } from '../admin/index.js';
import { can, keyPermissionsOf } from '../auth/index.js';
import { GatewayError } from '../errors/index.js';
import type { HttpDeps } from '../http/index.js';
import { renderKey, renderUsage } from '../http/render.js';
import { IdParams, typed } from '../http/routes/typed.js';
import { keyUsageOf } from '../reports/index.js';
import type { KeyRecord } from '../storage/index.js';
import { userActor, type Sessions, type SignedIn } from './session.js';

export function keyRoutes(app: FastifyInstance, deps: HttpDeps, sessions: Sessions): void {
  const scope = typed(app);

  const authorOf = (user: SignedIn, request: FastifyRequest): KeyAuthor => ({
    actor: userActor(request, user.userId),
    ownerUserId: user.userId,
    grantable: keyPermissionsOf(user.role),
  });

  /** Whether the signed-in user may see and manage `key`: every key with `keys`, else the ones it made. */
  const manages = (user: SignedIn, key: KeyRecord) =>
    key.accountId === user.accountId && (can(user.role, 'keys') || key.ownerUserId === user.userId);

  /** The key, if the user may manage it; else a 404, as for a key that does not exist. */
  async function manageable(user: SignedIn, id: string): Promise<KeyRecord> {
    const key = await deps.storage.keys.get(id);
    if (!key || !manages(user, key)) throw new GatewayError('not_found', { message: `No key ${id}`, param: 'id' });
    if (!keyPermissionsOf(user.role).includes(key.permissions))
      throw new GatewayError('permission_denied', {
        message: `Your role (${user.role}) may not change a ${key.permissions} key`,
        param: 'id',
      });
    return key;
  }

  scope.get('/api/keys', async (request) => {
    const user = await sessions.require(request, 'own_keys');
    const keys = (await deps.storage.keys.listByAccount(user.accountId)).filter((key) => manages(user, key)).reverse();
    // Each key's requests and credits today and this month, as GET /v1/key tells the key itself.
    const data = await Promise.all(
      keys.map(async (key) => {
        const { daily, monthly } = await keyUsageOf(deps.storage.usage, key.id);
        return { ...renderKey(key), activity: { daily: renderUsage(daily), monthly: renderUsage(monthly) } };
      }),
    );
    return { object: 'list', data };
  });

  scope.post('/api/keys', { schema: { body: CreateKeySchema } }, async (request, reply) => {
    const user = await sessions.require(request, 'own_keys');
    const created = await deps.admin.createKey(user.accountId, request.body, authorOf(user, request));
    reply.code(201);
    return { ...renderKey(created.record), key: created.key };
  });

  scope.patch('/api/keys/:id', { schema: { params: IdParams, body: PatchKeySchema } }, async (request) => {
    const user = await sessions.require(request, 'own_keys');
    const key = await manageable(user, request.params.id);
    return renderKey(await deps.admin.updateKey(key.id, request.body, authorOf(user, request)));
  });

  scope.post('/api/keys/:id/revoke', { schema: { params: IdParams } }, async (request) => {
    const user = await sessions.require(request, 'own_keys');
    const key = await manageable(user, request.params.id);
    return renderKey(await deps.admin.revokeKey(key.id, authorOf(user, request)));
  });
}
