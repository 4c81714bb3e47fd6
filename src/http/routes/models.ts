import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { CAPABILITY_ALIASES, renderModel } from '../../catalog/index.js';
import { invalidRequest } from '../../errors/index.js';
import { admitRead } from '../admit-read.js';
import type { HttpDeps } from '../deps.js';
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
    await admitRead(deps, request, reply, 'models');
    // Fastify has decoded the path once already (`sandbox%2Fecho` is `sandbox/echo`); decoding again would misread a `%`.
    const name = request.params['*'];
    const model = deps.catalog.resolve(name);
    return renderModel(model, deps.performance.figures(model.id), true);
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
