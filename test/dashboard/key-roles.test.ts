/**
 * The dashboard's key rules per role, through its JSON API: owners and admins see, make, change and revoke every key
 * (management keys included); a member only its own, and only project and read-only ones; billing has no keys. Each
 * change is audited as the signed-in user. On SQLite and PostgreSQL.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { Role } from '../../src/storage/index.js';
import { describeEach } from '../support/backends.js';
import { DIALECTS } from '../support/databases.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { DashboardClient, uniqueEmail } from './client.js';
import { addMember, sessionAs } from './team.js';

describeEach(DIALECTS)('dashboard key rules per role on %s', (dialect) => {
  let gateway: TestGateway;
  let accountId: string;
  let firstKeyId: string;
  const people = new Map<Role, { client: DashboardClient; userId: string; email: string }>();

  beforeAll(async () => {
    gateway = await startGateway({ dialect });
    for (const role of ['owner', 'admin', 'member', 'billing'] as const) {
      const client = new DashboardClient(gateway.url);
      const email = uniqueEmail(`keys-${role}`);
      const { body } = await client.signUp(email);
      const userId = body.account_id.replace(/^acct_/, 'usr_');
      if (role === 'owner') {
        accountId = body.account_id;
        firstKeyId = body.first_key.id;
        people.set('owner', { client, userId, email });
      } else {
        await addMember(gateway, accountId, userId, role);
        people.set(role, { client: await sessionAs(gateway, accountId, userId), userId, email });
      }
    }
  });
  afterAll(() => gateway?.close());

  const person = (role: Role) => people.get(role)!;
  const as = (role: Role) => person(role).client;

  test('an admin makes any key, management included, and owns it; owners and admins see every key', async () => {
    const made = await as('admin').request('POST', '/keys', { name: 'provisioner', permissions: 'management' });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    expect(made.body).toMatchObject({
      permissions: 'management',
      owner: { id: person('admin').userId, email: person('admin').email },
    });
    for (const role of ['owner', 'admin'] as const) {
      const ids = (await as(role).request('GET', '/keys')).body.data.map((k: { id: string }) => k.id);
      expect(ids).toEqual(expect.arrayContaining([firstKeyId, made.body.id]));
    }
    // The key works over /v1/keys for its maker's account.
    const listed = await fetch(`${gateway.baseURL}/keys`, { headers: { authorization: `Bearer ${made.body.key}` } });
    expect(listed.status).toBe(200);
  });

  test('a member makes only project and read-only keys, and sees and manages only its own', async () => {
    for (const permissions of ['full', 'management']) {
      const refused = await as('member').request('POST', '/keys', { permissions });
      expect([refused.status, refused.body.error.code, refused.body.error.param]).toEqual([
        403,
        'permission_denied',
        'permissions',
      ]);
    }
    const own = await as('member').request('POST', '/keys', {
      name: 'my project',
      permissions: 'project',
      models: ['sandbox/echo'],
      limit: 1,
      limit_reset: 'daily',
      allowed_ips: ['10.0.0.0/8'],
    });
    expect(own.status, JSON.stringify(own.body)).toBe(201);
    expect(own.body).toMatchObject({ owner: { id: person('member').userId }, limit: 1, limit_reset: 'daily' });

    const seen = (await as('member').request('GET', '/keys')).body.data.map((k: { id: string }) => k.id);
    expect(seen).toEqual([own.body.id]);
    for (const [method, path, body] of [
      ['PATCH', `/keys/${firstKeyId}`, { name: 'mine now' }],
      ['POST', `/keys/${firstKeyId}/revoke`, undefined],
    ] as const) {
      const answer = await as('member').request(method, path, body);
      expect([answer.status, answer.body.error.code]).toEqual([404, 'not_found']);
    }
    const patched = await as('member').request('PATCH', `/keys/${own.body.id}`, { limit: 2, allowed_ips: [] });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ limit: 2, allowed_ips: [] });

    // An admin manages the member's key too; the owner sees it.
    const byAdmin = await as('admin').request('PATCH', `/keys/${own.body.id}`, { name: 'reviewed' });
    expect([byAdmin.status, byAdmin.body.name]).toEqual([200, 'reviewed']);
    const ownerSees = (await as('owner').request('GET', '/keys')).body.data.find((k: any) => k.id === own.body.id);
    expect(ownerSees).toMatchObject({ name: 'reviewed', owner: { email: person('member').email } });
    const revoked = await as('member').request('POST', `/keys/${own.body.id}/revoke`);
    expect([revoked.status, revoked.body.revoked]).toEqual([200, true]);

    const audit = (await gateway.app.storage.audit.list(accountId, { limit: 50, action: 'key.' })).filter(
      (entry) => entry.targetId === own.body.id,
    );
    expect(audit.map((e) => [e.action, e.actorType, e.actorId]).reverse()).toEqual([
      ['key.create', 'user', person('member').userId],
      ['key.update', 'user', person('member').userId],
      ['key.update', 'user', person('admin').userId],
      ['key.revoke', 'user', person('member').userId],
    ]);
  });

  test('billing has no keys: listing, making, changing and revoking are 403', async () => {
    for (const [method, path, body] of [
      ['GET', '/keys', undefined],
      ['POST', '/keys', { name: 'x', permissions: 'read_only' }],
      ['PATCH', `/keys/${firstKeyId}`, { name: 'x' }],
      ['POST', `/keys/${firstKeyId}/revoke`, undefined],
    ] as const) {
      const answer = await as('billing').request(method, path, body);
      expect([answer.status, answer.body.error.code], `${method} ${path}`).toEqual([403, 'permission_denied']);
    }
  });

  test('bad governance values are a 400 naming the field', async () => {
    for (const [body, param] of [
      [{ limit: -1 }, 'limit'],
      [{ limit_reset: 'hourly' }, 'limit_reset'],
      [{ expires_at: '2001-01-01T00:00:00Z' }, 'expires_at'],
      [{ requests_per_minute: 10_000_000 }, 'requests_per_minute'],
      [{ allowed_ips: ['300.1.1.1'] }, 'allowed_ips'],
    ] as const) {
      const answer = await as('owner').request('POST', '/keys', body);
      expect([answer.status, answer.body.error.param], JSON.stringify(body)).toEqual([400, param]);
    }
  });
});
