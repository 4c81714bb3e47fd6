/** The OpenAPI paths of `/v1/keys`: an account's keys managed by its `management` (and `full`) keys. */
import { CreateKeySchema, PatchKeySchema } from '../admin/index.js';
import { json, operation, path, type Json } from './openapi-builder.js';
import { ApiKeySchema, CreatedApiKeySchema, Page } from './schemas.js';

export function keyPaths(): Json {
  const id = [path('id', 'Key id (`key_...`)')];
  const errors = [400, 401, 403, 404, 429];
  return {
    '/v1/keys': {
      post: operation(
        'keys',
        'Create a key (never a `management` key, never a permission beyond your own); `key` is shown only here',
        { body: CreateKeySchema, ok: json(CreatedApiKeySchema), okStatus: 201, errors },
      ),
      get: operation('keys', "List the account's keys, newest last (revoked ones with `revoked: true`)", {
        ok: json(Page(ApiKeySchema)),
        errors,
      }),
    },
    '/v1/keys/{id}': {
      get: operation('keys', 'One key of the account', { parameters: id, ok: json(ApiKeySchema), errors }),
      patch: operation('keys', "Change a key's name, limit, expiry, rate limits or allowed addresses", {
        parameters: id,
        body: PatchKeySchema,
        ok: json(ApiKeySchema),
        errors,
      }),
      delete: operation('keys', 'Revoke a key (not the calling key, not a `management` key)', {
        parameters: id,
        ok: json(ApiKeySchema),
        errors,
      }),
    },
  };
}
