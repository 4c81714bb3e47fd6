import type { FastifyInstance } from 'fastify';
import { CAPABILITY_ALIASES, renderModel } from '../../catalog/index.js';
import { invalidRequest } from '../../errors/index.js';
import { admitRead } from '../admit-read.js';
import type { HttpDeps } from '../deps.js';

type Query = Record<string, string | string[] | undefined>;

export function modelRoutes(server: FastifyInstance, deps: HttpDeps): void {
  server.get('/v1/models', async (request, reply) => {
    await admitRead(deps, request, reply, 'models');
    const query = request.query as Query;
    const detailed = booleanParam(query, 'include_capabilities', false);
    const activeOnly = booleanParam(query, 'active_only', true);
    const provider = stringParam(query, 'provider');
    const capabilityName = stringParam(query, 'capability');
    let capability;
    if (capabilityName !== undefined) {
      capability = CAPABILITY_ALIASES[capabilityName];
      if (!capability) {
        throw invalidRequest(`Invalid value for 'capability': use one of ${Object.keys(CAPABILITY_ALIASES).join(', ')}`, 'capability');
      }
    }
    const models = deps.catalog.list({ activeOnly, ...(provider ? { provider } : {}), ...(capability ? { capability } : {}) });
    return { object: 'list', data: models.map((m) => renderModel(m, deps.performance.figures(m.id), detailed)) };
  });

  server.get('/v1/models/*', async (request, reply) => {
    await admitRead(deps, request, reply, 'models');
    // Fastify has decoded the path once already (`sandbox%2Fecho` is `sandbox/echo`); decoding again would misread a `%`.
    const name = (request.params as { '*': string })['*'];
    const model = deps.catalog.resolve(name);
    return renderModel(model, deps.performance.figures(model.id), true);
  });
}

function stringParam(query: Query, name: string): string | undefined {
  const value = query[name];
  if (Array.isArray(value)) throw invalidRequest(`Query parameter '${name}' was given more than once`, name);
  return value;
}

function booleanParam(query: Query, name: string, fallback: boolean): boolean {
  const value = stringParam(query, name);
  if (value === undefined) return fallback;
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw invalidRequest(`Invalid value for '${name}': expected true or false, got '${value}'`, name);
}
