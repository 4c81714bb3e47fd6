/**
 * `/v1/keys`: an account's keys managed by its own keys (operation `keys`: `management` and `full` keys), as hosted
 * gateways' provisioning APIs do (docs/api.md#keys-api). A key never gives more than it may: no `management` key
 * is made here, no permission its owner's role may not give, no rate above the account's; it neither changes nor
 * revokes itself or a key it could not have made.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { CreateKeySchema, PatchKeySchema, type KeyAuthor } from '../../admin/index.js';
import { keyPermissionsOf } from '../../auth/index.js';
import { GatewayError } from '../../errors/index.js';
import { compiledValidator } from '../../gateway/schema.js';
import type { KeyRecord } from '../../storage/index.js';
import { admitRead } from '../admit-read.js';
import type { HttpDeps } from '../deps.js';
import { renderKey } from '../render.js';
import { IdParams, typed } from './typed.js';

const validateCreate = compiledValidator(CreateKeySchema);
const validatePatch = compiledValidator(PatchKeySchema);

/** The calling key as the author of what it makes and changes. */
function authorOf(caller: KeyRecord, ip: string): KeyAuthor {
  // A key without an owner was made by the operator, who acts for the account's owner.
  const grantable = keyPermissionsOf(caller.ownerRole ?? 'owner').filter((p) => p !== 'management');
  return { actor: { type: 'key', id: caller.id, ip }, ownerUserId: caller.ownerUserId, grantable };
}

export function keyRoutes(app: FastifyInstance, deps: HttpDeps): void {
  const server = typed(app);
  const caller = (request: FastifyRequest, reply: FastifyReply) => admitRead(deps, request, reply, 'keys');

  /** The account's key `id` (another account's is unknown, like a key that does not exist). */
  async function keyOf(owner: KeyRecord, id: string): Promise<KeyRecord> {
    const key = await deps.storage.keys.get(id);
    if (!key || key.accountId !== owner.accountId)
      throw new GatewayError('not_found', { message: `No key ${id}`, param: 'id' });
    return key;
  }

  /** 403 unless the caller could have made `target`, and it is not the caller itself. */
  function requireManageable(owner: KeyRecord, target: KeyRecord, author: KeyAuthor): void {
    if (target.id === owner.id)
      throw new GatewayError('permission_denied', { message: 'A key may not change or revoke itself', param: 'id' });
    if (!author.grantable!.includes(target.permissions))
      throw new GatewayError('permission_denied', {
        message: `This key may not change or revoke a ${target.permissions} key`,
        param: 'id',
      });
  }

  server.post('/v1/keys', async (request, reply) => {
    const owner = await caller(request, reply);
    const body = validateCreate(request.body ?? {});
    if (body.permissions === 'management')
      throw new GatewayError('permission_denied', {
        message: 'A management key cannot be made over /v1/keys (only in the dashboard or by the operator)',
        param: 'permissions',
      });
    const environment = body.environment ?? owner.environment;
    // A test key stays in the sandbox: it cannot mint a key that spends the live balance.
    if (owner.environment === 'test' && environment === 'live')
      throw new GatewayError('permission_denied', {
        message: 'A test key makes only test keys',
        param: 'environment',
      });
    const created = await deps.admin.createKey(owner.accountId, { ...body, environment }, authorOf(owner, request.ip));
    // The only time the key is shown.
    return reply.code(201).send({ ...renderKey(created.record), key: created.key });
  });

  server.get('/v1/keys', async (request, reply) => {
    const owner = await caller(request, reply);
    const keys = await deps.storage.keys.listByAccount(owner.accountId);
    return { object: 'list', data: keys.map((key) => renderKey(key)) };
  });

  server.get('/v1/keys/:id', { schema: { params: IdParams } }, async (request, reply) => {
    const owner = await caller(request, reply);
    return renderKey(await keyOf(owner, request.params.id));
  });

  server.patch('/v1/keys/:id', { schema: { params: IdParams } }, async (request, reply) => {
    const owner = await caller(request, reply);
    const patch = validatePatch(request.body ?? {});
    const target = await keyOf(owner, request.params.id);
    const author = authorOf(owner, request.ip);
    requireManageable(owner, target, author);
    return renderKey(await deps.admin.updateKey(target.id, patch, author));
  });

  server.delete('/v1/keys/:id', { schema: { params: IdParams } }, async (request, reply) => {
    const owner = await caller(request, reply);
    const target = await keyOf(owner, request.params.id);
    const author = authorOf(owner, request.ip);
    requireManageable(owner, target, author);
    return renderKey(await deps.admin.revokeKey(target.id, author));
  });
}
