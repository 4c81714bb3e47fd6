/**
 * `/v1/keys` against the running gateway: a management key makes, lists, changes and revokes a project key with every
 * governance field; the key it made works with the official SDK and tells its limit in GET /v1/key; what a key may
 * not do over /v1/keys is refused with the status, code and param a client can act on; each change is in the audit
 * log with before and after. On SQLite, and on PostgreSQL with Redis.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEach, needsPostgresAndRedis } from '../support/backends.js';
import { apiCall } from '../support/admin-call.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { REDIS_TEST_URL } from '../support/redis.js';
import { startReplicas, type Replicas } from '../support/replicas.js';

const CONFIGURATIONS: Array<{ name: string; dialect: 'sqlite' | 'postgres'; env: Record<string, string> }> = [
  { name: 'SQLite', dialect: 'sqlite', env: {} },
  {
    name: 'PostgreSQL and Redis',
    dialect: 'postgres',
    env: { REDIS_URL: REDIS_TEST_URL, TOLLGATE_REDIS_PREFIX: `tgtest:keys:${process.pid}:${Date.now()}:` },
  },
];

const DAY_MS = 86_400_000;
const nextUtcMidnight = (at: number) => new Date(Math.floor(at / DAY_MS) * DAY_MS + DAY_MS).toISOString();

describeEach(CONFIGURATIONS)('/v1/keys on $name', ({ dialect, env }) => {
  let gateway: TestGateway;
  let account: { id: string; key: string };
  let management: { id: string; key: string };
  const call = (key: string | undefined, method: string, path: string, body?: unknown) =>
    apiCall(gateway.baseURL, key, method, path, body);
  const manage = (method: string, path: string, body?: unknown) => call(management.key, method, path, body);

  beforeAll(async () => {
    gateway = await startGateway({ dialect, env });
    account = await gateway.account({ plan: 'pay_as_you_go' });
    management = await gateway.key(account.id, { name: 'provisioner', permissions: 'management' });
  });
  afterAll(async () => gateway?.close());

  it('lets a management key make, list, change and revoke a project key with every field', async () => {
    const expires = new Date(Date.now() + 3 * DAY_MS).toISOString();
    const created = await manage('POST', '/keys', {
      name: 'ci runner',
      permissions: 'project',
      models: ['sandbox/echo'],
      limit: 0.5,
      limit_reset: 'daily',
      expires_at: expires,
      requests_per_minute: 30,
      tokens_per_minute: 20_000,
      allowed_ips: ['127.0.0.1/8', '::1'],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const made = created.body;
    expect(made.key).toMatch(/^tg-live-/);
    expect(made).toMatchObject({
      object: 'api_key',
      account_id: account.id,
      name: 'ci runner',
      permissions: 'project',
      environment: 'live',
      models: ['sandbox/echo'],
      limit: 0.5,
      spend_limit: 0.5,
      limit_reset: 'daily',
      limit_remaining: 0.5,
      usage: 0,
      expires_at: expires,
      requests_per_minute: 30,
      tokens_per_minute: 20_000,
      allowed_ips: ['127.0.0.0/8', '::1/128'],
      owner: null,
      revoked: false,
    });
    expect([nextUtcMidnight(Date.now() - 5_000), nextUtcMidnight(Date.now())]).toContain(made.limit_resets_at);

    // The key works with the official SDK, from an address it allows, and tells its limit.
    const answer = await gateway.client(made.key).chat.completions.create({
      model: 'sandbox/echo',
      messages: [{ role: 'user', content: 'hello' }],
    });
    expect(answer.choices[0]!.message.content).toBeTruthy();
    const own = await call(made.key, 'GET', '/key');
    expect(own.status).toBe(200);
    expect(own.body).toMatchObject({ limit: 0.5, limit_reset: 'daily', allowed_ips: ['127.0.0.0/8', '::1/128'] });

    const list = await manage('GET', '/keys');
    expect(list.status).toBe(200);
    expect(list.body.object).toBe('list');
    expect(list.body.data.at(-1).id).toBe(made.id);
    expect(list.body.data.map((k: any) => k.id)).toEqual(expect.arrayContaining([management.id, made.id]));
    expect(JSON.stringify(list.body)).not.toContain(made.key);
    // The operator's view of the account renders the same key the same way.
    const operatorView = (await gateway.admin('GET', `/admin/accounts/${account.id}`)).body.keys;
    const fields = ['limit', 'limit_reset', 'limit_resets_at', 'expires_at', 'allowed_ips', 'owner'] as const;
    const pick = (key: Record<string, unknown>) => Object.fromEntries(fields.map((field) => [field, key[field]]));
    expect(pick(operatorView.find((k: { id: string }) => k.id === made.id))).toEqual(pick(made));
    const one = await manage('GET', `/keys/${made.id}`);
    expect(one.status).toBe(200);
    expect(one.body.key).toBeUndefined();
    expect(one.body.name).toBe('ci runner');

    const patched = await manage('PATCH', `/keys/${made.id}`, {
      name: 'ci runner (weekly)',
      limit: 2,
      limit_reset: 'weekly',
      expires_at: null,
      requests_per_minute: null,
      allowed_ips: [],
    });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body).toMatchObject({
      name: 'ci runner (weekly)',
      limit: 2,
      limit_reset: 'weekly',
      expires_at: null,
      requests_per_minute: null,
      tokens_per_minute: 20_000,
      allowed_ips: [],
    });

    const revoked = await manage('DELETE', `/keys/${made.id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body).toMatchObject({ id: made.id, revoked: true });
    const refused = await call(made.key, 'GET', '/models');
    expect(refused.status).toBe(401);
    const listed = (await manage('GET', '/keys')).body.data.find((k: any) => k.id === made.id);
    expect(listed).toMatchObject({ revoked: true });

    // Each change is in the audit log, in order, with what the key was before and after; never the key itself.
    const entries = (await gateway.app.storage.audit.list(account.id, { limit: 50, action: 'key.' }))
      .filter((entry) => entry.targetId === made.id)
      .reverse();
    expect(entries.map((e) => e.action)).toEqual(['key.create', 'key.update', 'key.revoke']);
    for (const entry of entries) expect(entry).toMatchObject({ actorType: 'key', actorId: management.id });
    expect(entries[0]!.ip).toMatch(/127\.0\.0\.1|::1/);
    expect(entries[0]).toMatchObject({
      before: null,
      after: { name: 'ci runner', limit: '0.5', limit_reset: 'daily' },
    });
    expect(entries[1]).toMatchObject({
      before: { name: 'ci runner', limit: '0.5', allowed_ips: ['127.0.0.0/8', '::1/128'] },
      after: { name: 'ci runner (weekly)', limit: '2', limit_reset: 'weekly', allowed_ips: [] },
    });
    expect(entries[2]!.before).toMatchObject({ revoked_at: null });
    expect((entries[2]!.after as any).revoked_at).toBeTypeOf('string');
    expect(JSON.stringify(entries)).not.toContain(made.key);
  });

  it('refuses what a key may not do over /v1/keys, naming why', async () => {
    const audited = async () => (await gateway.app.storage.audit.list(account.id, { limit: 100 })).length;
    const entriesBefore = await audited();
    const refusals: Array<[string, string, unknown, number, string, string | null]> = [
      ['POST', '/keys', { permissions: 'management' }, 403, 'permission_denied', 'permissions'],
      ['POST', '/keys', { requests_per_minute: 10_000_000 }, 400, 'invalid_request', 'requests_per_minute'],
      ['POST', '/keys', { tokens_per_minute: 0 }, 400, 'invalid_request', 'tokens_per_minute'],
      ['POST', '/keys', { allowed_ips: ['10.0.0.0/33'] }, 400, 'invalid_request', 'allowed_ips'],
      ['POST', '/keys', { allowed_ips: ['not-an-address'] }, 400, 'invalid_request', 'allowed_ips'],
      [
        'POST',
        '/keys',
        { expires_at: new Date(Date.now() - 1000).toISOString() },
        400,
        'invalid_request',
        'expires_at',
      ],
      ['POST', '/keys', { expires_at: 'next tuesday' }, 400, 'invalid_request', 'expires_at'],
      ['POST', '/keys', { limit: 0.0000000001 }, 400, 'invalid_request', 'limit'],
      ['POST', '/keys', { limit: -1 }, 400, 'invalid_request', 'limit'],
      ['POST', '/keys', { limit_reset: 'hourly' }, 400, 'invalid_request', 'limit_reset'],
      ['POST', '/keys', { permission: 'full' }, 400, 'invalid_request', 'permission'],
    ];
    for (const [method, path, body, status, code, param] of refusals) {
      const answer = await manage(method, path, body);
      expect(answer.status, `${JSON.stringify(body)}: ${JSON.stringify(answer.body)}`).toBe(status);
      expect(answer.body.error).toMatchObject({ code, param });
    }
    // Nothing refused was written to the audit log.
    expect(await audited()).toBe(entriesBefore);

    // A read-only key has no access to /v1/keys.
    const readOnly = await gateway.key(account.id, { permissions: 'read_only' });
    const denied = await call(readOnly.key, 'GET', '/keys');
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe('permission_denied');

    // Another account's keys are unknown here.
    const other = await gateway.account();
    const otherKey = await gateway.key(other.id, { name: 'theirs' });
    for (const [method, body] of [['GET'], ['PATCH', { name: 'mine now' }], ['DELETE']] as const) {
      const answer = await manage(method, `/keys/${otherKey.id}`, body);
      expect(answer.status, method).toBe(404);
      expect(answer.body.error).toMatchObject({ code: 'not_found', param: 'id' });
    }
    expect((await call(otherKey.key, 'GET', '/models')).status).toBe(200);

    // Neither another management key nor itself.
    const second = await gateway.key(account.id, { permissions: 'management' });
    for (const target of [second.id, management.id]) {
      for (const [method, body] of [['PATCH', { name: 'x' }], ['DELETE']] as const) {
        const answer = await manage(method, `/keys/${target}`, body);
        expect(answer.status, `${method} ${target}`).toBe(403);
        expect(answer.body.error).toMatchObject({ code: 'permission_denied', param: 'id' });
      }
    }
    expect((await call(second.key, 'GET', '/keys')).status).toBe(200);

    // A management key never calls a model.
    const chat = await call(management.key, 'POST', '/chat/completions', {
      model: 'sandbox/echo',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(chat.status).toBe(403);
  });

  it("lets a full key make keys too, in its own environment, never beyond the owner's permissions", async () => {
    const test = await gateway.key(account.id, { environment: 'test' });
    const made = await call(test.key, 'POST', '/keys', { name: 'sandbox runner', permissions: 'read_only' });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    expect(made.body).toMatchObject({ environment: 'test', permissions: 'read_only', owner: null });
    expect(made.body.key).toMatch(/^tg-test-/);
    const live = await call(test.key, 'POST', '/keys', { environment: 'live' });
    expect([live.status, live.body.error.code, live.body.error.param]).toEqual([
      403,
      'permission_denied',
      'environment',
    ]);
    const full = await call(account.key, 'POST', '/keys', {});
    expect(full.status).toBe(201);
    expect(full.body).toMatchObject({ environment: 'live', permissions: 'full', name: 'live key' });
  });
});

needsPostgresAndRedis('/v1/keys across two replicas on PostgreSQL and Redis', () => {
  let replicas: Replicas;
  beforeAll(async () => {
    replicas = await startReplicas(2);
  }, 90_000);
  afterAll(async () => replicas?.stop());

  it('a key made, changed and revoked on one replica is used, refused and forgotten on the other at once', async () => {
    const on = (i: number) => (key: string, method: string, path: string, body?: unknown) =>
      apiCall(`${replicas.urls[i]}/v1`, key, method, path, body);
    const [one, two] = [on(0), on(1)];
    const account = await replicas.admin('POST', '/admin/accounts', { email: `replicas-${Date.now()}@example.com` });
    const management = await replicas.admin('POST', `/admin/accounts/${account.body.id}/keys`, {
      permissions: 'management',
    });
    const made = await one(management.body.key, 'POST', '/keys', { name: 'shared', permissions: 'read_only' });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    expect((await two(made.body.key, 'GET', '/models')).status).toBe(200);

    // Outside its addresses now (the test client is 127.0.0.1): the other replica refuses it at once.
    const patched = await one(management.body.key, 'PATCH', `/keys/${made.body.id}`, { allowed_ips: ['10.0.0.0/8'] });
    expect(patched.status).toBe(200);
    const refused = await two(made.body.key, 'GET', '/models');
    expect([refused.status, refused.body.error?.code]).toEqual([403, 'ip_not_allowed']);

    const revoked = await two(management.body.key, 'DELETE', `/keys/${made.body.id}`);
    expect(revoked.body.revoked).toBe(true);
    const changeRevoked = await one(management.body.key, 'PATCH', `/keys/${made.body.id}`, { allowed_ips: [] });
    expect([changeRevoked.status, changeRevoked.body.error.param]).toEqual([400, 'id']);
    expect((await one(made.body.key, 'GET', '/models')).status).toBe(401);
    const listed = await one(management.body.key, 'GET', '/keys');
    expect(listed.body.data.find((k: { id: string }) => k.id === made.body.id)).toMatchObject({ revoked: true });
  });
});
