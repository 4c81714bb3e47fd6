/** The signed-in user's API: keys, settings, usage, ledger and models, checked against the public /v1 API. */
import OpenAI from 'openai';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { DashboardClient, uniqueEmail } from './client.js';
import { describeEach } from '../support/backends.js';
import { DIALECTS } from '../support/databases.js';

describeEach(DIALECTS)('dashboard account API on %s', (dialect) => {
  let gateway: TestGateway;
  let client: DashboardClient;
  let fullKey: string;
  let accountId: string;

  beforeAll(async () => {
    gateway = await startGateway({ dialect });
    client = new DashboardClient(gateway.url);
    const { body } = await client.signUp(uniqueEmail('account'));
    fullKey = body.first_key.key;
    accountId = body.account_id;
  });
  afterAll(() => gateway?.close());

  test('keys: live, test and project keys with a model allow-list and spend limit, listed newest first', async () => {
    const test_ = await client.request('POST', '/keys', { name: 'ci', environment: 'test', permissions: 'read_only' });
    expect(test_.status).toBe(201);
    expect(test_.body.key).toMatch(/^tg-test-[A-Za-z0-9]{32}$/);
    const project = await client.request('POST', '/keys', {
      name: 'proj',
      permissions: 'project',
      models: ['sandbox/echo'],
      spend_limit: 0.5,
    });
    expect(project.status).toBe(201);
    expect([project.body.models, project.body.spend_limit]).toEqual([['sandbox/echo'], 0.5]);
    const list = (await client.request('GET', '/keys')).body.data;
    expect(list.map((k: { name: string }) => k.name).slice(0, 2)).toEqual(['proj', 'ci']);
    expect(JSON.stringify(list)).not.toContain(project.body.key);

    const projectClient = gateway.client(project.body.key);
    await projectClient.chat.completions.create({ model: 'sandbox/echo', messages: [{ role: 'user', content: 'hi' }] });
    const other = await projectClient.chat.completions
      .create({ model: 'sandbox/lorem', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e) => e);
    expect(other).toBeInstanceOf(OpenAI.PermissionDeniedError);
    const readOnly = await gateway
      .client(test_.body.key)
      .chat.completions.create({ model: 'sandbox/echo', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e) => e);
    expect(readOnly).toBeInstanceOf(OpenAI.PermissionDeniedError);
  });

  test('keys: bad input is a 400 naming the field', async () => {
    for (const [body, param] of [
      [{ permissions: 'owner' }, 'permissions'],
      [{ permissions: 'project', models: ['no/such-model'] }, 'models'],
      [{ permissions: 'full', spend_limit: -1 }, 'spend_limit'],
      [{ permissions: 'read_only', models: ['sandbox/echo'] }, 'models'],
      [{ environment: 'staging' }, 'environment'],
    ] as const) {
      const response = await client.request('POST', '/keys', body);
      expect([response.status, response.body.error.type, response.body.error.param]).toEqual([
        400,
        'invalid_request_error',
        param,
      ]);
    }
  });

  test("revoking another account's key is a 404 and leaves it working", async () => {
    const stranger = await gateway.account();
    const response = await client.request('POST', `/keys/${(await gateway.key(stranger.id)).id}/revoke`);
    expect([response.status, response.body.error.code]).toEqual([404, 'not_found']);
    await expect(
      gateway
        .client(stranger.key)
        .chat.completions.create({ model: 'sandbox/echo', messages: [{ role: 'user', content: 'hi' }] }),
    ).resolves.toBeTruthy();
  });

  test('settings: low-balance thresholds are saved and shown; the plan is not theirs to change', async () => {
    const saved = await client.request('PATCH', '/settings', { low_balance_thresholds: [1, 3.5] });
    expect(saved.status).toBe(200);
    expect(saved.body.low_balance_thresholds).toEqual([1, 3.5]);
    const plan = await client.request('PATCH', '/settings', { plan: 'enterprise' });
    expect([plan.status, plan.body.error.param]).toEqual([400, 'plan']);
  });

  test('auto-recharge cannot be enabled without a saved payment method, so no request adds unpaid credit', async () => {
    const attack = await client.request('PATCH', '/settings', {
      auto_recharge: { enabled: true, threshold: 5, amount: 1000 },
    });
    expect([attack.status, attack.body.error.code, attack.body.error.param]).toEqual([
      400,
      'payment_method_required',
      'auto_recharge.enabled',
    ]);
    expect(attack.body.error.message).toMatch(/payment/i);
    for (const body of [{ auto_recharge: { amount: 1000 } }, { auto_recharge: { threshold: 5 } }]) {
      expect((await client.request('PATCH', '/settings', body)).status).toBe(400);
    }
    expect((await client.request('PATCH', '/settings', { auto_recharge: { enabled: false } })).status).toBe(200);

    const sdk = gateway.client(fullKey);
    const before = ((await sdk.get('/credits')) as { balance: { credits: number } }).balance.credits;
    await sdk.chat.completions.create({ model: 'sandbox/lorem', messages: [{ role: 'user', content: 'one request' }] });
    // A recharge runs after the debit is committed: give one time to land before looking.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const after = (await sdk.get('/credits')) as {
      balance: { credits: number };
      billing: { auto_recharge: Record<string, unknown> };
    };
    expect(after.balance.credits).toBeLessThan(before);
    const ledger = (await client.request('GET', '/ledger?limit=100')).body.data as Array<{ kind: string }>;
    expect(ledger.filter((e) => e.kind === 'recharge')).toEqual([]);
    expect(after.billing.auto_recharge).toMatchObject({
      enabled: false,
      available: false,
      unavailable_reason: expect.stringMatching(/payment/i),
    });
    const overview = (await client.request('GET', '/overview')).body;
    expect(overview.billing.auto_recharge).toMatchObject({
      enabled: false,
      available: false,
      unavailable_reason: after.billing.auto_recharge.unavailable_reason,
    });
  });

  test('usage: the last 30 days per day and per model, live and test apart, matching GET /v1/credits', async () => {
    const sdk = gateway.client(fullKey);
    const answer = await sdk.chat.completions.create({
      model: 'sandbox/lorem',
      messages: [{ role: 'user', content: 'count me' }],
    });
    const usage = (await client.request('GET', '/usage')).body;
    expect(usage.days).toHaveLength(30);
    const today = usage.days.at(-1);
    expect(today.day).toBe(new Date().toISOString().slice(0, 10));
    const credits = (await sdk.get('/credits')) as { usage: { daily: { credits_used: number; requests: number } } };
    expect(today.credits).toBe(credits.usage.daily.credits_used);
    expect(today.requests).toBe(credits.usage.daily.requests);
    const lorem = usage.models.find((m: { model: string }) => m.model === 'sandbox/lorem');
    expect(lorem.completion_tokens).toBeGreaterThanOrEqual(answer.usage!.completion_tokens);
    const testUsage = (await client.request('GET', '/usage?environment=test')).body;
    expect(testUsage.days.every((d: { requests: number }) => d.requests === 0)).toBe(true);
    const overview = (await client.request('GET', '/overview')).body;
    expect(overview.usage.daily.requests).toBe(credits.usage.daily.requests);
    expect((await client.request('GET', '/usage?environment=prod')).status).toBe(400);
  });

  test('ledger: pages of entries, newest first, without gaps or repeats', async () => {
    for (let i = 1; i <= 23; i++)
      await gateway.admin('POST', `/admin/accounts/${accountId}/credits`, { amount: i / 100, note: `top-up ${i}` });
    const first = (await client.request('GET', '/ledger?limit=10')).body;
    expect(first.data).toHaveLength(10);
    expect(first.has_more).toBe(true);
    expect(first.data[0].note).toBe('top-up 23');
    const seen = [...first.data];
    let page = first;
    while (page.has_more) {
      page = (await client.request('GET', `/ledger?limit=10&before=${page.next_before}`)).body;
      seen.push(...page.data);
    }
    const ids = seen.map((e: { id: string }) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(seen.at(-1).kind).toBe('grant');
    expect(seen.filter((e: { kind: string }) => e.kind === 'topup')).toHaveLength(23);
    expect((await client.request('GET', '/ledger?limit=0')).body.error.param).toBe('limit');
  });

  test('models: the catalog of GET /v1/models with the same filters', async () => {
    const dashboard = (await client.request('GET', '/models?active_only=false')).body.data;
    const v1 = (await gateway.client(fullKey).get('/models?active_only=false')) as { data: Array<{ id: string }> };
    expect(dashboard.map((m: { id: string }) => m.id)).toEqual(v1.data.map((m) => m.id));
    const sandbox = (await client.request('GET', '/models?provider=sandbox')).body.data;
    expect(sandbox.length).toBeGreaterThan(0);
    expect(sandbox.every((m: { provider: { id: string } }) => m.provider.id === 'sandbox')).toBe(true);
    const embedding = (await client.request('GET', '/models?capability=embedding')).body.data;
    expect(embedding.map((m: { id: string }) => m.id)).toContain('sandbox/embed');
    expect(embedding.every((m: { capabilities: { embeddings: boolean } }) => m.capabilities.embeddings)).toBe(true);
    const bad = await client.request('GET', '/models?capability=telepathy');
    expect([bad.status, bad.body.error.param]).toEqual([400, 'capability']);
  });

  test('every account route needs a session', async () => {
    const anonymous = new DashboardClient(gateway.url);
    for (const path of ['/keys', '/overview', '/usage', '/ledger', '/models']) {
      const response = await anonymous.request('GET', path);
      expect([path, response.status, response.body.error.code]).toEqual([path, 401, 'not_signed_in']);
    }
  });
});
