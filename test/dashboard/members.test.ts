/**
 * The Members section: list, change roles (owners alone touch owners), remove (the member's keys revoked with it),
 * leave; the last owner can neither leave, be removed nor be demoted; every change audited as the signed-in user.
 * On SQLite and PostgreSQL.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { Role } from '../../src/storage/index.js';
import { describeEach } from '../support/backends.js';
import { DIALECTS } from '../support/databases.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { DashboardClient, uniqueEmail } from './client.js';
import { addMember, sessionAs } from './team.js';

describeEach(DIALECTS)('dashboard members on %s', (dialect) => {
  let gateway: TestGateway;
  let accountId = '';
  const people = new Map<string, { client: DashboardClient; userId: string; email: string }>();
  const as = (name: string) => people.get(name)!.client;
  const id = (name: string) => people.get(name)!.userId;

  async function join(name: string, role: Role) {
    const email = uniqueEmail(name);
    const { body } = await new DashboardClient(gateway.url).signUp(email);
    const userId = body.account_id.replace(/^acct_/, 'usr_');
    await addMember(gateway, accountId, userId, role);
    people.set(name, { client: await sessionAs(gateway, accountId, userId), userId, email });
  }

  beforeAll(async () => {
    gateway = await startGateway({ dialect });
    const owner = new DashboardClient(gateway.url);
    const email = uniqueEmail('owner');
    const { body } = await owner.signUp(email);
    accountId = body.account_id;
    people.set('owner', { client: owner, userId: accountId.replace(/^acct_/, 'usr_'), email });
    await join('admin', 'admin');
    await join('dev', 'member');
  });
  afterAll(() => gateway?.close());

  const audit = async (action: string) =>
    (await gateway.app.storage.audit.list(accountId, { limit: 50, action })).map((e) => ({
      actor: e.actorId,
      target: e.targetId,
      before: e.before,
      after: e.after,
      ip: e.ip,
    }));

  test('owners and admins list the members with email, role and when they joined', async () => {
    const { status, body } = await as('admin').request('GET', '/members');
    expect(status).toBe(200);
    expect(body.data.map((m: { email: string; role: string }) => [m.email, m.role])).toEqual([
      [people.get('owner')!.email, 'owner'],
      [people.get('admin')!.email, 'admin'],
      [people.get('dev')!.email, 'member'],
    ]);
    expect(typeof body.data[0].joined).toBe('number');
  });

  test('an admin changes a member role but may not make an owner; the change is audited', async () => {
    const changed = await as('admin').request('PATCH', `/members/${id('dev')}`, { role: 'billing' });
    expect([changed.status, changed.body.role]).toEqual([200, 'billing']);
    const refused = await as('admin').request('PATCH', `/members/${id('dev')}`, { role: 'owner' });
    expect([refused.status, refused.body.error.message]).toEqual([403, 'Only an owner may make or unmake an owner']);
    const bad = await as('admin').request('PATCH', `/members/${id('dev')}`, { role: 'king' });
    expect([bad.status, bad.body.error.param]).toEqual([400, 'role']);
    expect(await audit('member.role')).toContainEqual({
      actor: id('admin'),
      target: id('dev'),
      before: { email: people.get('dev')!.email, role: 'member' },
      after: { email: people.get('dev')!.email, role: 'billing' },
      ip: expect.any(String),
    });
    await as('owner').request('PATCH', `/members/${id('dev')}`, { role: 'member' });
  });

  test('the last owner can neither leave, be removed nor be demoted; with a second owner it can', async () => {
    const lastOwner = 'An account needs an owner: make another member an owner first';
    for (const [method, path, body] of [
      ['POST', '/members/leave', undefined],
      ['DELETE', `/members/${id('owner')}`, undefined],
      ['PATCH', `/members/${id('owner')}`, { role: 'admin' }],
    ] as const) {
      const refused = await as('owner').request(method, path, body);
      expect([refused.status, refused.body.error.message], `${method} ${path}`).toEqual([400, lastOwner]);
    }
    expect((await as('owner').request('GET', '/session')).body.role).toBe('owner');
    // An admin cannot remove an owner at all.
    const byAdmin = await as('admin').request('DELETE', `/members/${id('owner')}`);
    expect(byAdmin.status).toBe(403);
    // With the admin made an owner, the first owner may step down.
    expect((await as('owner').request('PATCH', `/members/${id('admin')}`, { role: 'owner' })).status).toBe(200);
    expect((await as('owner').request('PATCH', `/members/${id('owner')}`, { role: 'admin' })).status).toBe(200);
    expect((await as('admin').request('PATCH', `/members/${id('owner')}`, { role: 'owner' })).status).toBe(200);
  });

  test('removing a member revokes its keys in the account, in the same change, both audited', async () => {
    const made = await as('dev').request('POST', '/keys', { name: 'dev key', permissions: 'project' });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const before = await fetch(`${gateway.baseURL}/key`, { headers: { authorization: `Bearer ${made.body.key}` } });
    expect(before.status).toBe(200);
    const removed = await as('admin').request('DELETE', `/members/${id('dev')}`);
    expect([removed.status, removed.body.deleted]).toEqual([200, true]);
    expect((await gateway.app.storage.keys.get(made.body.id))!.revokedAt).not.toBeNull();
    expect((await as('dev').request('GET', '/overview')).status).toBe(401);
    expect(await audit('member.remove')).toContainEqual(
      expect.objectContaining({ actor: id('admin'), target: id('dev'), after: null }),
    );
    expect((await audit('key.revoke')).map((e) => e.target)).toContain(made.body.id);
  });

  test('a member leaves; its session moves to its own account', async () => {
    await join('leaver', 'billing');
    const left = await as('leaver').request('POST', '/members/leave');
    expect([left.status, left.body.deleted]).toEqual([200, true]);
    const session = await as('leaver').request('GET', '/session');
    expect(session.body.account_id).not.toBe(accountId);
    expect(session.body.accounts.map((a: { account_id: string }) => a.account_id)).not.toContain(accountId);
    expect(await audit('member.leave')).toContainEqual(
      expect.objectContaining({ actor: id('leaver'), target: id('leaver'), after: null }),
    );
  });
});
