/** The signed-in user's own account: credits, usage, settings, closing, ledger and the model catalog (keys: key-routes.ts). */
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { CAPABILITY_ALIASES, renderModel } from '../catalog/index.js';
import { normalizeEmail } from '../admin/index.js';
import { GatewayError, invalidRequest } from '../errors/index.js';
import type { HttpDeps } from '../http/index.js';
import { renderLedgerEntry } from '../http/render.js';
import { QueryValue, single, typed } from '../http/routes/typed.js';
import type { Environment } from '../storage/index.js';
import { overview, usageHistory } from './overview.js';
import type { Capability } from '../auth/index.js';
import { userActor, type Sessions } from './session.js';

const SettingsPatch = Type.Object(
  {
    auto_recharge: Type.Optional(
      Type.Object(
        {
          enabled: Type.Optional(Type.Boolean()),
          threshold: Type.Optional(Type.Number({ minimum: 0 })),
          amount: Type.Optional(Type.Number({ minimum: 0 })),
        },
        { additionalProperties: false },
      ),
    ),
    low_balance_thresholds: Type.Optional(Type.Array(Type.Number({ minimum: 0 }), { maxItems: 10 })),
  },
  { additionalProperties: false },
);

const CloseBody = Type.Object(
  { confirm: Type.String({ maxLength: 320, description: "The account's email, typed to confirm" }) },
  { additionalProperties: false },
);

const EnvironmentQuery = Type.Object({ environment: QueryValue });
const LedgerQuery = Type.Object({ limit: QueryValue, before: QueryValue });
const ModelsQuery = Type.Object({
  provider: QueryValue,
  capability: QueryValue,
  active_only: QueryValue,
  include_capabilities: QueryValue,
});
type Query = Partial<Record<string, string | string[]>>;

export function accountRoutes(app: FastifyInstance, deps: HttpDeps, sessions: Sessions): void {
  const scope = typed(app);
  async function signedInAccount(request: Parameters<Sessions['require']>[0], capability: Capability) {
    const { accountId } = await sessions.require(request, capability);
    const account = await deps.storage.accounts.get(accountId);
    if (!account) throw new GatewayError('not_signed_in');
    return account;
  }

  scope.get('/api/overview', { schema: { querystring: EnvironmentQuery } }, async (request) => {
    const account = await signedInAccount(request, 'usage');
    return overview(
      deps.storage,
      deps.config,
      deps.processors,
      account,
      deps.limitsFor(account),
      environmentParam(request.query),
    );
  });

  scope.get('/api/usage', { schema: { querystring: EnvironmentQuery } }, async (request) => {
    const account = await signedInAccount(request, 'usage');
    return usageHistory(deps.storage, account.id, environmentParam(request.query), 30);
  });

  scope.patch('/api/settings', { schema: { body: SettingsPatch } }, async (request) => {
    // Auto-recharge spends money (billing); thresholds and limits are settings. A patch of both needs both.
    const { auto_recharge: autoRecharge, ...rest } = request.body;
    if (autoRecharge !== undefined) await sessions.require(request, 'billing');
    const account = await signedInAccount(
      request,
      autoRecharge === undefined || Object.keys(rest).length > 0 ? 'settings' : 'billing',
    );
    const { userId } = await sessions.require(request);
    await deps.admin.updateOwnSettings(account.id, request.body, {
      actor: userActor(request, userId),
      ownerUserId: userId,
    });
    const updated = (await deps.storage.accounts.get(account.id))!;
    return overview(deps.storage, deps.config, deps.processors, updated, deps.limitsFor(updated), 'live');
  });

  // The owner's "delete" (see admin/account-closing.ts). The session moves to another account of the owner, or ends.
  scope.post('/api/account/close', { schema: { body: CloseBody } }, async (request, reply) => {
    const account = await signedInAccount(request, 'delete');
    if (normalizeEmail(request.body.confirm) !== account.email)
      throw invalidRequest(`Type the account's email, ${account.email}, to confirm closing it`, 'confirm');
    const { userId } = await sessions.require(request);
    const closing = await deps.admin.closeAccount(account.id, userActor(request, userId));
    const [next] = await deps.storage.members.accountsOf(userId);
    if (next) await sessions.switchAccount(request, next.accountId);
    else await sessions.end(request, reply);
    return {
      object: 'account',
      id: account.id,
      closed: true,
      closed_at: Math.floor(closing.closedAt / 1000),
      account_id: next?.accountId ?? null,
    };
  });

  scope.get('/api/ledger', { schema: { querystring: LedgerQuery } }, async (request) => {
    const account = await signedInAccount(request, 'usage');
    const { query } = request;
    const limitText = stringParam(query, 'limit') ?? '20';
    const limit = Number(limitText);
    if (!/^\d+$/.test(limitText) || limit < 1 || limit > 100)
      throw invalidRequest("Invalid value for 'limit': a whole number from 1 to 100", 'limit');
    const before = stringParam(query, 'before');
    const rows = await deps.storage.ledger.list(account.id, { limit: limit + 1, ...(before ? { before } : {}) });
    const page = rows.slice(0, limit);
    return {
      object: 'list',
      data: page.map(renderLedgerEntry),
      has_more: rows.length > limit,
      next_before: rows.length > limit ? page.at(-1)!.id : null,
    };
  });

  // The catalog GET /v1/models shows, with the same filters.
  scope.get('/api/models', { schema: { querystring: ModelsQuery } }, async (request) => {
    await sessions.require(request, 'usage');
    const { query } = request;
    const provider = stringParam(query, 'provider');
    const capabilityName = stringParam(query, 'capability');
    const capability = capabilityName === undefined ? undefined : CAPABILITY_ALIASES[capabilityName];
    if (capabilityName !== undefined && !capability) {
      throw invalidRequest(
        `Invalid value for 'capability': use one of ${Object.keys(CAPABILITY_ALIASES).join(', ')}`,
        'capability',
      );
    }
    const activeOnly = booleanParam(query, 'active_only', true);
    const detailed = booleanParam(query, 'include_capabilities', false);
    const models = deps.catalog.list({
      activeOnly,
      ...(provider ? { provider } : {}),
      ...(capability ? { capability } : {}),
    });
    return { object: 'list', data: models.map((m) => renderModel(m, deps.performance.figures(m.id), detailed)) };
  });
}

/** An empty value means absent. */
function stringParam(query: Query, name: string): string | undefined {
  const value = single(query[name], name);
  return value === '' ? undefined : value;
}

function booleanParam(query: Query, name: string, fallback: boolean): boolean {
  const value = stringParam(query, name);
  if (value === undefined) return fallback;
  if (value !== 'true' && value !== 'false')
    throw invalidRequest(`Invalid value for '${name}': expected true or false, got '${value}'`, name);
  return value === 'true';
}

function environmentParam(query: Query): Environment {
  const value = stringParam(query, 'environment') ?? 'live';
  if (value !== 'live' && value !== 'test')
    throw invalidRequest("Invalid value for 'environment': expected live or test", 'environment');
  return value;
}
