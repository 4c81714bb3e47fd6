/**
 * The audit log as a team reads it: webhook changes over /v1 and a dashboard settings change each leave one entry
 * (who, from where, before and after, never the secret); key changes show too; pages with `after` and `limit`, a
 * filter by target; only `full` and `management` keys of the same account read it; a refused change leaves nothing.
 * On SQLite, and on PostgreSQL with Redis.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEach } from '../support/backends.js';
import { apiCall } from '../support/admin-call.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { REDIS_TEST_URL } from '../support/redis.js';
import { DashboardClient, uniqueEmail } from '../dashboard/client.js';
import { TEST_WEBHOOKS } from '../webhooks/receiver-server.js';

const CONFIGURATIONS: Array<{ name: string; dialect: 'sqlite' | 'postgres'; env: Record<string, string> }> = [
  { name: 'SQLite', dialect: 'sqlite', env: {} },
  {
    name: 'PostgreSQL and Redis',
    dialect: 'postgres',
    env: { REDIS_URL: REDIS_TEST_URL, TOLLGATE_REDIS_PREFIX: `tgtest:audit:${process.pid}:${Date.now()}:` },
  },
];

const SECRET = 'a-very-secret-webhook-secret-of-40-chars!';

describeEach(CONFIGURATIONS)('the audit log on $name', ({ dialect, env }) => {
  let gateway: TestGateway;
  let owner: DashboardClient;
  let accountId: string;
  let full: { id: string; key: string };
  const call = (key: string, method: string, path: string, body?: unknown) =>
    apiCall(gateway.baseURL, key, method, path, body);
  const audit = async (key: string, query = '') => {
    const answer = await call(key, 'GET', `/audit${query}`);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    return answer.body;
  };

  beforeAll(async () => {
    gateway = await startGateway({ dialect, env, overrides: { webhooks: TEST_WEBHOOKS } });
    owner = new DashboardClient(gateway.url);
    const { body } = await owner.signUp(uniqueEmail('audit-owner'));
    accountId = body.account_id;
    full = await gateway.key(accountId, { name: 'ops', permissions: 'full' });
  });
  afterAll(async () => gateway?.close());

  it('records a webhook made, changed and deleted over /v1 with the key, its address, before and after', async () => {
    const made = await call(full.key, 'POST', '/webhooks', {
      url: 'http://127.0.0.1:9/hook',
      secret: SECRET,
      events: [{ type: 'llm.completion' }],
      description: 'first',
    });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    const id = made.body.id;
    expect((await call(full.key, 'PATCH', `/webhooks/${id}`, { description: 'second' })).status).toBe(200);
    expect((await call(full.key, 'DELETE', `/webhooks/${id}`)).status).toBe(200);

    const page = await audit(full.key, '?action=webhook.');
    expect(page.data.map((e: any) => e.action)).toEqual(['webhook.delete', 'webhook.update', 'webhook.create']);
    for (const entry of page.data) {
      expect(entry).toMatchObject({
        object: 'audit_entry',
        actor: { type: 'key', id: full.id, email: null },
        target: { type: 'webhook', id },
        ip: '127.0.0.1',
      });
      expect(JSON.stringify(entry)).not.toContain(SECRET);
      expect(Math.floor(Date.parse(entry.created_date) / 1000)).toBe(entry.created);
    }
    const [deleted, updated, created] = page.data;
    expect(created).toMatchObject({ before: null, after: { description: 'first', url: 'http://127.0.0.1:9/hook' } });
    expect(updated).toMatchObject({ before: { description: 'first' }, after: { description: 'second' } });
    expect(deleted).toMatchObject({ before: { description: 'second' }, after: null });
  });

  it('shows a key made over /v1/keys, pages with after and limit, and filters by action', async () => {
    const made = await call(full.key, 'POST', '/keys', { name: 'reader', permissions: 'read_only' });
    expect(made.status).toBe(201);
    const [newest] = (await audit(full.key, '?limit=1')).data;
    expect(newest).toMatchObject({ action: 'key.create', target: { type: 'key', id: made.body.id } });

    const all = await audit(full.key);
    expect(all.has_more).toBe(false);
    const first = await audit(full.key, '?limit=2');
    expect(first.has_more).toBe(true);
    const second = await audit(full.key, `?limit=2&after=${first.data[1].id}`);
    expect([...first.data, ...second.data].map((e: any) => e.id)).toEqual(all.data.slice(0, 4).map((e: any) => e.id));
    expect((await audit(full.key, '?action=key.create')).data.every((e: any) => e.action === 'key.create')).toBe(true);
    const bad = await call(full.key, 'GET', '/audit?limit=0');
    expect(bad.status).toBe(400);
    expect(bad.body.error.param).toBe('limit');
  });

  it("shows another account's keys nothing, and refuses read-only and project keys", async () => {
    const other = await gateway.account();
    const theirs = await gateway.key(other.id, { permissions: 'full' });
    expect((await audit(theirs.key)).data.filter((e: any) => e.target.id === full.id)).toEqual([]);
    expect((await audit(theirs.key, '?action=webhook.')).data).toEqual([]);
    for (const permissions of ['read_only', 'project']) {
      const key = await gateway.key(accountId, { permissions });
      expect((await call(key.key, 'GET', '/audit')).status).toBe(403);
    }
  });

  it('records a dashboard settings change with the user as actor; a refused change records nothing', async () => {
    const before = (await audit(full.key)).data.length;
    const refused = await owner.request('PATCH', '/settings', { low_balance_thresholds: ['lots'] });
    expect(refused.status).toBe(400);
    expect((await audit(full.key)).data.length).toBe(before);
    const refusedHook = await call(full.key, 'POST', '/webhooks', { url: 'not a url', secret: SECRET });
    expect(refusedHook.status).toBe(400);
    expect((await audit(full.key)).data.length).toBe(before);

    const changed = await owner.request('PATCH', '/settings', { low_balance_thresholds: [5] });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    const [entry] = (await audit(full.key, '?action=settings.update')).data;
    expect(entry).toMatchObject({
      actor: { type: 'user', id: accountId.replace(/^acct_/, 'usr_') },
      target: { type: 'account', id: accountId },
      after: { lowBalanceThresholdsNano: ['5000000000'] },
    });
    expect(entry.actor.email).toMatch(/^audit-owner/);
    const byOperator = await gateway.admin('PATCH', `/admin/accounts/${accountId}`, { requests_per_minute: 77 });
    expect(byOperator.status, JSON.stringify(byOperator.body)).toBe(200);
    const [operatorEntry] = (await audit(full.key, '?action=account.update')).data;
    expect(operatorEntry).toMatchObject({
      actor: { type: 'operator', id: null, email: null },
      ip: '127.0.0.1',
      before: { requestsPerMinute: null },
      after: { requestsPerMinute: 77 },
    });
    const viaDashboard = await owner.request('GET', '/audit?action=settings.');
    expect(viaDashboard.status).toBe(200);
    expect(viaDashboard.body.data[0]).toEqual(entry);
  });
});
