/**
 * Who may use which dashboard route: one table, one row per route of the dashboard's JSON API, asked of an owner,
 * an admin, a member and a billing member of one account. The routes are read from src/dashboard, so a new route
 * without a row here fails the first test. A refusal is the role's 403 ("Your role in this account ..."); anything
 * else (200, 201, 400, 404) means the role got past the guard. On SQLite and PostgreSQL.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { Role } from '../../src/storage/index.js';
import { describeEach } from '../support/backends.js';
import { DIALECTS } from '../support/databases.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { DashboardClient, uniqueEmail } from './client.js';
import { addMember, sessionAs } from './team.js';

/** `self`: any member, about itself (leaving), tested in members.test.ts: it would end the session's membership. */
type Access = 'public' | 'self' | readonly Role[];
const ALL: readonly Role[] = ['owner', 'admin', 'member', 'billing'];
const MANAGERS: readonly Role[] = ['owner', 'admin'];
const BILLING: readonly Role[] = ['owner', 'billing'];
const KEYS: readonly Role[] = ['owner', 'admin', 'member'];

/** `METHOD /api/path` -> who may use it, and the body sent (chosen to reach the guard, not the validation). */
const ROUTES: Record<string, { access: Access; body?: unknown }> = {
  'GET /api/session': { access: 'public' },
  'GET /api/accounts': { access: ALL },
  'POST /api/session/account': { access: ALL, body: { account_id: 'acct_nothing_here' } },
  'POST /api/signin': { access: 'public' },
  'POST /api/signup': { access: 'public' },
  'POST /api/signout': { access: 'public' },
  'POST /api/verify': { access: 'public' },
  'GET /api/overview': { access: ALL },
  'GET /api/usage': { access: ALL },
  'GET /api/usage/export': { access: ALL },
  'GET /api/ledger': { access: ALL },
  'GET /api/models': { access: ALL },
  'GET /api/generation': { access: ALL },
  'GET /api/audit': { access: MANAGERS },
  'GET /api/keys': { access: KEYS },
  'POST /api/keys': { access: KEYS, body: { name: 'matrix', permissions: 'read_only' } },
  'PATCH /api/keys/:id': { access: KEYS, body: { name: 'renamed' } },
  'POST /api/keys/:id/revoke': { access: KEYS },
  'PATCH /api/settings': { access: MANAGERS, body: { low_balance_thresholds: [] } },
  // A wrong confirmation: the owner gets past the guard (400) and the account stays open.
  'POST /api/account/close': { access: ['owner'], body: { confirm: 'not-this-account@example.com' } },
  'GET /api/members': { access: MANAGERS },
  'PATCH /api/members/:user_id': { access: MANAGERS, body: { role: 'member' } },
  'DELETE /api/members/:user_id': { access: MANAGERS },
  'POST /api/members/leave': { access: 'self' },
  'GET /api/members/invitations': { access: MANAGERS },
  'POST /api/members/invitations': { access: MANAGERS, body: { email: 'matrix@example.com', role: 'member' } },
  'DELETE /api/members/invitations/:id': { access: MANAGERS },
  'POST /api/invitations/accept': { access: 'public' },
  'GET /api/purchasing': { access: BILLING },
  'GET /api/purchases': { access: BILLING },
  'POST /api/purchases': { access: BILLING, body: {} },
  'GET /api/purchases/:id': { access: BILLING },
  'GET /api/recharges': { access: BILLING },
  'GET /api/webhooks': { access: MANAGERS },
  'POST /api/webhooks': { access: MANAGERS, body: {} },
  'PATCH /api/webhooks/:id': { access: MANAGERS, body: { description: 'matrix' } },
  'DELETE /api/webhooks/:id': { access: MANAGERS },
  'POST /api/webhooks/:id/test': { access: MANAGERS },
  'GET /api/webhooks/deliveries': { access: MANAGERS },
  'GET /api/webhooks/dead-letters': { access: MANAGERS },
  'POST /api/webhooks/dead-letters/:id/replay': { access: MANAGERS },
};

/** Every `scope.<method>('/api/...'` in src/dashboard. */
function dashboardRoutes(): string[] {
  const dir = join(import.meta.dirname, '../../src/dashboard');
  const found = new Set<string>();
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts'))) {
    const source = readFileSync(join(dir, file), 'utf8');
    for (const match of source.matchAll(/scope\.(get|post|put|patch|delete)\(\s*'(\/api\/[^']+)'/g))
      found.add(`${match[1]!.toUpperCase()} ${match[2]}`);
  }
  return [...found].sort();
}

const roleRefusal = (response: { status: number; body: { error?: { message?: string } } }) =>
  response.status === 403 && /^Your role in this account/.test(response.body?.error?.message ?? '');

test('every dashboard route has a row in the role table, and every row a route', () => {
  expect(dashboardRoutes()).toEqual(Object.keys(ROUTES).sort());
});

describeEach(DIALECTS)('dashboard routes per role on %s', (dialect) => {
  let gateway: TestGateway;
  const clients = new Map<Role, DashboardClient>();

  beforeAll(async () => {
    gateway = await startGateway({ dialect });
    let accountId = '';
    for (const role of ALL) {
      const client = new DashboardClient(gateway.url);
      const { body } = await client.signUp(uniqueEmail(`roles-${role}`));
      const userId = body.account_id.replace(/^acct_/, 'usr_');
      if (role === 'owner') {
        accountId = body.account_id;
        clients.set(role, client);
      } else {
        await addMember(gateway, accountId, userId, role);
        clients.set(role, await sessionAs(gateway, accountId, userId));
      }
    }
  });
  afterAll(() => gateway?.close());

  for (const role of ALL) {
    test(`${role}: allowed exactly the routes its role may use`, async () => {
      const outcome: Record<string, 'allowed' | 'refused'> = {};
      const expected: Record<string, 'allowed' | 'refused'> = {};
      for (const [route, { access, body }] of Object.entries(ROUTES)) {
        if (access === 'public' || access === 'self') continue;
        const [method, path] = route.split(' ') as [string, string];
        const url = path.replace(/^\/api/, '').replace(/:\w+/g, 'nothing_here');
        const response = await clients.get(role)!.request(method, url, body);
        expect(response.status, `${role} ${route}`).not.toBe(500);
        outcome[route] = roleRefusal(response) ? 'refused' : 'allowed';
        expected[route] = access.includes(role) ? 'allowed' : 'refused';
      }
      expect(outcome).toEqual(expected);
    });
  }

  test('auto-recharge is billing: a billing member may set it, an admin may not', async () => {
    const patch = { auto_recharge: { enabled: false } };
    expect(roleRefusal(await clients.get('billing')!.request('PATCH', '/settings', patch))).toBe(false);
    expect(roleRefusal(await clients.get('admin')!.request('PATCH', '/settings', patch))).toBe(true);
  });
});
