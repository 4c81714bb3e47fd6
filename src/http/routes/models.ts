import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { CAPABILITY_ALIASES, renderModel, type CatalogModel } from '../../catalog/index.js';
import { invalidRequest } from '../../errors/index.js';
import { admit, authorizationOf } from '../../gateway/index.js';
import { admitRead } from '../admit-read.js';
import type { HttpDeps } from '../deps.js';
import { singleHeader } from '../client-signal.js';
import { QueryValue, single, typed } from './typed.js';

const ModelsQuery = Type.Object({
  include_capabilities: QueryValue,
  active_only: QueryValue,
  provider: QueryValue,
  capability: QueryValue,
});
type Query = Static<typeof ModelsQuery>;

export function modelRoutes(app: FastifyInstance, deps: HttpDeps): void {
  const server = typed(app);
  server.get('/v1/models', { schema: { querystring: ModelsQuery } }, async (request, reply) => {
    if (request.headers['anthropic-version'] !== undefined) return anthropicModelList(deps, request, reply);
    await admitRead(deps, request, reply, 'models');
    const { query } = request;
    const detailed = booleanParam(query, 'include_capabilities', false);
    const activeOnly = booleanParam(query, 'active_only', true);
    const provider = stringParam(query, 'provider');
    const capabilityName = stringParam(query, 'capability');
    let capability;
    if (capabilityName !== undefined) {
      capability = CAPABILITY_ALIASES[capabilityName];
      if (!capability) {
        throw invalidRequest(
          `Invalid value for 'capability': use one of ${Object.keys(CAPABILITY_ALIASES).join(', ')}`,
          'capability',
        );
      }
    }
    const models = deps.catalog.list({
      activeOnly,
      ...(provider ? { provider } : {}),
      ...(capability ? { capability } : {}),
    });
    return { object: 'list', data: models.map((m) => renderModel(m, deps.performance.figures(m.id), detailed)) };
  });

  server.get('/v1/models/*', { schema: { params: Type.Object({ '*': Type.String() }) } }, async (request, reply) => {
    const anthropic = request.headers['anthropic-version'] !== undefined;
    if (anthropic) await admitAnthropic(deps, request, reply);
    else await admitRead(deps, request, reply, 'models');
    // Fastify has decoded the path once already (`sandbox%2Fecho` is `sandbox/echo`); decoding again would misread a `%`.
    const name = request.params['*'];
    const model = deps.catalog.resolve(name);
    return anthropic ? anthropicModel(model) : renderModel(model, deps.performance.figures(model.id), true);
  });
}

function stringParam(query: Query, name: keyof Query): string | undefined {
  return single(query[name], name);
}

function booleanParam(query: Query, name: keyof Query, fallback: boolean): boolean {
  const value = stringParam(query, name);
  if (value === undefined) return fallback;
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw invalidRequest(`Invalid value for '${name}': expected true or false, got '${value}'`, name);
}

/**
 * The list in Anthropic's shape, for clients of Anthropic's API (they send `anthropic-version`, and the key in
 * `x-api-key`): the chat models, in one page.
 */
async function anthropicModelList(deps: HttpDeps, request: FastifyRequest, reply: FastifyReply) {
  await admitAnthropic(deps, request, reply);
  const data = deps.catalog
    .list({ activeOnly: true })
    .filter((m) => m.capabilities.chat)
    .map(anthropicModel);
  return { data, has_more: false, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null };
}

/** Anthropic's clients send the key in `x-api-key` as often as in `Authorization`. */
async function admitAnthropic(deps: HttpDeps, request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const authorization = authorizationOf(request.headers.authorization, singleHeader(request.headers['x-api-key']));
  const { headers } = await admit(deps, { authorization, clientIp: request.ip }, 'models');
  void reply.headers(headers);
}

function anthropicModel(model: CatalogModel) {
  const created_at = new Date(model.created * 1000).toISOString().replace('.000Z', 'Z');
  return { type: 'model', id: model.id, display_name: model.displayName, created_at };
}
