/**
 * A team of four shares one balance: the owner invites an admin, a member and a billing person by link (no SMTP),
 * each accepts on whichever replica the browser reaches, and each sees and does only what its role allows, in the
 * dashboard and over /v1 with the keys it may make. A role change reaches the member's key at once; the last owner
 * cannot leave; every change is in the audit log with who made it and from where. On SQLite (one process) and on
 * PostgreSQL + Redis with two replicas.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DashboardClient, uniqueEmail } from '../dashboard/client.js';
import { apiCall } from '../support/admin-call.js';
import { describeEach } from '../support/backends.js';
import { startGateway } from '../support/gateway.js';
import { REDIS_TEST_URL } from '../support/redis.js';
import { startReplicas } from '../support/replicas.js';

interface Stage {
  urls: string[];
  admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  stop(): Promise<void>;
}

const STAGES: Array<{ name: string; needs: Array<'postgres' | 'redis'>; start: () => Promise<Stage> }> = [
  {
    name: 'SQLite',
    needs: [],
    start: async () => {
      const gateway = await startGateway();
      return { urls: [gateway.url], admin: (m, p, b) => gateway.admin(m, p, b), stop: () => gateway.close() };
    },
  },
  {
    name: 'PostgreSQL + Redis, two replicas',
    needs: ['postgres', 'redis'],
    start: async () => {
      const replicas = await startReplicas(2);
      return { urls: replicas.urls, admin: (m, p, b) => replicas.admin(m, p, b), stop: () => replicas.stop() };
    },
  },
];

type Role = 'owner' | 'admin' | 'member' | 'billing';
const ROLES: Role[] = ['owner', 'admin', 'member', 'billing'];
const ask = { model: 'sandbox/echo', messages: [{ role: 'user' as const, content: 'hello team' }], max_tokens: 8 };

// `describeEach` skips a case whose servers are not reachable: it reads them from `dialect` and `env.REDIS_URL`.
const CASES = STAGES.map((s) => ({
  ...s,
  dialect: s.needs.includes('postgres') ? 'postgres' : 'sqlite',
  env: s.needs.includes('redis') ? { REDIS_URL: REDIS_TEST_URL } : {},
}));

describeEach(CASES)('a team of four on $name', ({ start }) => {
  let stage: Stage;
  const people: Partial<Record<Role, { email: string; browser: DashboardClient; url: string }>> = {};
  const person = (role: Role) => people[role]!;
  let accountId = '';
  let ownerKey = '';

  beforeAll(async () => {
    stage = await start();
    const url = (i: number) => stage.urls[i % stage.urls.length]!;
    const owner = { email: uniqueEmail('owner'), browser: new DashboardClient(url(0)), url: url(0) };
    const signedUp = await owner.browser.signUp(owner.email);
    expect(signedUp.status, JSON.stringify(signedUp.body)).toBe(201);
    accountId = signedUp.body.account_id;
    ownerKey = signedUp.body.first_key.key;
    people.owner = owner;
    expect((await stage.admin('POST', `/admin/accounts/${accountId}/credits`, { amount: 20 })).status).toBe(200);
    // Each invitee opens the link in a browser of its own, on the other replica where there are two.
    for (const [i, role] of (['admin', 'member', 'billing'] as const).entries()) {
      const email = uniqueEmail(role);
      const invited = await owner.browser.request('POST', '/members/invitations', { email, role });
      expect(invited.status, JSON.stringify(invited.body)).toBe(201);
      const token = new URL(invited.body.link).hash.slice(1);
      const browser = new DashboardClient(url(i + 1));
      await browser.request('GET', '/session');
      const accepted = await browser.request('POST', '/invitations/accept', {
        token,
        password: `${role} pass phrase 42`,
      });
      expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
      expect(accepted.body.account_id).toBe(accountId);
      people[role] = { email, browser, url: url(i + 1) };
    }
  }, 120_000);
  afterAll(() => stage?.stop());

  it('lists four members with their roles, one balance for all', async () => {
    const listed = await person('admin').browser.request('GET', '/members');
    expect(listed.status).toBe(200);
    const roles = Object.fromEntries(listed.body.data.map((m: { email: string; role: Role }) => [m.email, m.role]));
    expect(roles).toEqual(Object.fromEntries(ROLES.map((role) => [person(role).email, role])));
    for (const role of ROLES) {
      const session = await person(role).browser.request('GET', '/session');
      expect([role, session.body.account_id, session.body.role]).toEqual([role, accountId, role]);
    }
  });

  it('lets each role do only what it may in the dashboard', async () => {
    const rules: Array<[string, string, unknown, Role[]]> = [
      ['GET', '/overview', undefined, ['owner', 'admin', 'member', 'billing']],
      ['GET', '/ledger', undefined, ['owner', 'admin', 'member', 'billing']],
      ['GET', '/members', undefined, ['owner', 'admin']],
      ['GET', '/webhooks', undefined, ['owner', 'admin']],
      ['GET', '/purchases', undefined, ['owner', 'billing']],
      ['GET', '/audit', undefined, ['owner', 'admin']],
      ['PATCH', '/settings', { low_balance_thresholds: [2] }, ['owner', 'admin']],
      ['POST', '/keys', { name: 'a project key', permissions: 'project' }, ['owner', 'admin', 'member']],
      ['POST', '/keys', { name: 'a full key', permissions: 'full' }, ['owner', 'admin']],
    ];
    for (const [method, path, body, allowed] of rules) {
      for (const role of ROLES) {
        const answer = await person(role).browser.request(method, path, body);
        const expected = allowed.includes(role) ? (method === 'POST' ? 201 : 200) : 403;
        expect([method, path, role, answer.status]).toEqual([method, path, role, expected]);
      }
    }
  });

  it('shares one balance: the member and the owner spend it, the billing person sees both debits', async () => {
    const made = await person('member').browser.request('POST', '/keys', { name: 'mia app', permissions: 'project' });
    expect(made.status).toBe(201);
    const before = (await person('billing').browser.request('GET', '/overview')).body;
    const spend = async (key: string, url: string) => {
      const client = new OpenAI({ apiKey: key, baseURL: `${url}/v1`, maxRetries: 0 });
      const answer = await client.chat.completions.create(ask);
      return BigInt(Math.round((answer.usage as unknown as { cost: number }).cost * 1e9));
    };
    const spent = (await spend(made.body.key, person('billing').url)) + (await spend(ownerKey, person('member').url));
    expect(spent).toBeGreaterThan(0n);
    // The charge is written moments after the answer.
    let after = before;
    for (let i = 0; i < 50 && after.balance.credits === before.balance.credits; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      after = (await person('billing').browser.request('GET', '/overview')).body;
    }
    const nano = (usd: number) => BigInt(Math.round(usd * 1e9));
    expect(nano(before.balance.credits) - nano(after.balance.credits)).toBe(spent);
    // The member sees only its own keys; the admin sees them all.
    const own = (await person('member').browser.request('GET', '/keys')).body.data;
    expect(own.every((key: { owner: { email: string } | null }) => key.owner?.email === person('member').email)).toBe(
      true,
    );
    const all = (await person('admin').browser.request('GET', '/keys')).body.data;
    expect(all.length).toBeGreaterThan(own.length);
  });

  it('keeps the last owner, and takes a demoted member its keys at once', async () => {
    expect((await person('owner').browser.request('POST', '/members/leave')).status).toBe(400);
    const members = (await person('owner').browser.request('GET', '/members')).body.data;
    const id = (role: Role) => members.find((m: { email: string }) => m.email === person(role).email).user_id;
    expect((await person('admin').browser.request('PATCH', `/members/${id('owner')}`, { role: 'member' })).status).toBe(
      403,
    );
    expect((await person('owner').browser.request('PATCH', `/members/${id('owner')}`, { role: 'admin' })).status).toBe(
      400,
    );

    const key = (
      await person('member').browser.request('POST', '/keys', { name: 'short lived', permissions: 'project' })
    ).body.key;
    const client = new OpenAI({ apiKey: key, baseURL: `${person('owner').url}/v1`, maxRetries: 0 });
    await client.chat.completions.create(ask);
    expect(
      (await person('owner').browser.request('PATCH', `/members/${id('member')}`, { role: 'billing' })).status,
    ).toBe(200);
    let refused: unknown;
    for (let i = 0; i < 40 && !refused; i++) {
      refused = await client.chat.completions.create(ask).then(
        () => undefined,
        (error: unknown) => error,
      );
      if (!refused) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(refused).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect((await person('owner').browser.request('DELETE', `/members/${id('billing')}`)).status).toBe(200);
    // Removed from its only account, its session opens nothing any more.
    expect((await person('billing').browser.request('GET', '/overview')).status).toBe(401);
  });

  it('traces every change in the audit log: who, what, from where', async () => {
    const answer = await apiCall(`${person('owner').url}/v1`, ownerKey, 'GET', '/audit?limit=100');
    expect(answer.status, answer.text).toBe(200);
    const entries: Array<{ action: string; actor: { type: string; email: string | null }; ip: string | null }> =
      answer.body.data;
    const count = (action: string) => entries.filter((e) => e.action === action).length;
    expect(count('member.invite')).toBe(3);
    expect(count('member.join')).toBe(3);
    expect(count('member.role')).toBe(1);
    expect(count('member.remove')).toBe(1);
    expect(count('credits.add')).toBe(1);
    expect(count('settings.update')).toBe(2);
    expect(count('key.create')).toBeGreaterThanOrEqual(6);
    const byMember = entries.find((e) => e.action === 'key.create' && e.actor.email === person('member').email);
    expect(byMember).toMatchObject({ actor: { type: 'user' } });
    for (const entry of entries.filter((e) => e.actor.type === 'user')) expect(entry.ip).toMatch(/127\.0\.0\.1/);
    // A project key cannot read it.
    const made = await person('owner').browser.request('POST', '/keys', { name: 'reader', permissions: 'project' });
    expect((await apiCall(`${person('owner').url}/v1`, made.body.key, 'GET', '/audit')).status).toBe(403);
  });
});
