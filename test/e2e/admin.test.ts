/** The operator API under /admin, as an operator (and the keys it hands out) sees it. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../support/gateway.js';
import { startMockStripe, type MockStripe } from '../support/mock-stripe.js';
import { describeEach } from '../support/backends.js';
import { DIALECTS } from '../support/databases.js';

const KEY_FORMAT = /^tg-live-[0-9A-Za-z]{32}$/;
const TEST_KEY_FORMAT = /^tg-test-[0-9A-Za-z]{32}$/;

async function raw(gw: TestGateway, method: string, path: string, options: { token?: string; body?: unknown } = {}) {
  const headers: Record<string, string> = {};
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${gw.url}${path}`, {
    method,
    headers,
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as any };
}

async function credits(gw: TestGateway, key: string) {
  return raw(gw, 'GET', '/v1/credits', { token: key });
}

/** Sum of all ledger entries, in nano-USD (exact). */
function ledgerSumNano(entries: Array<{ amount: number }>): bigint {
  return entries.reduce((sum, e) => sum + BigInt(Math.round(e.amount * 1e9)), 0n);
}
const nano = (usd: number) => BigInt(Math.round(usd * 1e9));

describeEach(DIALECTS)('admin API core flow (%s)', (dialect) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway({ dialect });
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('creates an account with a live key and the 5 USD sign-up grant, recorded in the ledger', async () => {
    const email = `core-${dialect}@example.com`;
    const created = await gw.admin('POST', '/admin/accounts', { email });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ email, plan: 'free' });
    expect(typeof created.body.id).toBe('string');
    expect(created.body.api_key).toMatch(KEY_FORMAT);

    const account = await gw.admin('GET', `/admin/accounts/${created.body.id}`);
    expect(account.status).toBe(200);
    expect(account.body.balance).toEqual({ credits: 5, currency: 'USD' });
    expect(JSON.stringify(account.body)).not.toContain(created.body.api_key);

    const ledger = await gw.admin('GET', `/admin/accounts/${created.body.id}/ledger`);
    expect(ledger.status).toBe(200);
    expect(ledger.body.data).toHaveLength(1);
    expect(ledger.body.data[0]).toMatchObject({ kind: 'grant', amount: 5, balance_after: 5 });

    const balance = await credits(gw, created.body.api_key);
    expect(balance.status).toBe(200);
    expect(balance.body.balance).toEqual({ credits: 5, currency: 'USD' });
  });

  it('creates a key shown once, lists it by hint, and revokes it at once', async () => {
    const { id: accountId } = await gw.account();
    const created = await gw.admin('POST', `/admin/accounts/${accountId}/keys`, { name: 'ci' });
    expect(created.status).toBe(201);
    const key: string = created.body.key;
    expect(key).toMatch(KEY_FORMAT);
    expect(created.body.hint).toBe(`${key.slice(0, 12)}...${key.slice(-4)}`);

    const listed = await gw.admin('GET', `/admin/accounts/${accountId}`);
    expect(listed.body.keys.map((k: any) => k.id)).toContain(created.body.id);
    expect(JSON.stringify(listed.body)).not.toContain(key);

    expect((await credits(gw, key)).status).toBe(200);
    const revoked = await gw.admin('DELETE', `/admin/keys/${created.body.id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body.revoked).toBe(true);
    const after = await credits(gw, key);
    expect(after.status).toBe(401);
    expect(after.body.error).toMatchObject({
      type: 'authentication_error',
      code: 'invalid_api_key',
      message: 'Invalid API key provided',
    });
  });

  it('tops up and corrects credits without going below zero; the ledger sums to the balance', async () => {
    const { id } = await gw.account();
    const topup = await gw.admin('POST', `/admin/accounts/${id}/credits`, { amount: 2.5, note: 'top-up' });
    expect(topup.status).toBe(200);
    expect(topup.body.amount).toBe(2.5);
    expect(topup.body.balance).toEqual({ credits: 7.5, currency: 'USD' });

    const correction = await gw.admin('POST', `/admin/accounts/${id}/credits`, { amount: -100, note: 'correction' });
    expect(correction.status).toBe(200);
    expect(correction.body.amount).toBe(-7.5);
    expect(correction.body.balance).toEqual({ credits: 0, currency: 'USD' });

    const account = await gw.admin('GET', `/admin/accounts/${id}`);
    expect(account.body.balance.credits).toBe(0);
    const ledger = await gw.admin('GET', `/admin/accounts/${id}/ledger`);
    const entries = ledger.body.data as Array<{ kind: string; amount: number; note: string | null }>;
    expect(entries).toHaveLength(3);
    expect(ledgerSumNano(entries)).toBe(nano(account.body.balance.credits));
    const corr = entries.find((e) => e.amount < 0)!;
    expect(corr.amount).toBe(-7.5);
    expect(corr.note).toBe('correction');
    expect(entries.find((e) => e.amount === 2.5)).toBeDefined();
  });
});

describe('admin API (sqlite)', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startGateway();
  });
  afterAll(async () => {
    await gw?.close();
  });

  it('refuses requests without the admin token (401 missing_api_key envelope)', async () => {
    for (const [method, path] of [
      ['GET', '/admin/accounts'],
      ['POST', '/admin/accounts'],
      ['GET', '/admin/accounts/acct_nope'],
      ['DELETE', '/admin/keys/key_nope'],
    ] as const) {
      const response = await raw(gw, method, path, method === 'POST' ? { body: { email: 'x@example.com' } } : {});
      expect(response.status, `${method} ${path}`).toBe(401);
      expect(response.body).toEqual({
        error: { message: expect.any(String), type: 'authentication_error', code: 'missing_api_key', param: null },
      });
      expect(response.headers.get('x-request-id')).toBeTruthy();
    }
  });

  it('refuses a wrong token and a customer API key (401 invalid_api_key)', async () => {
    const wrong = await raw(gw, 'GET', '/admin/accounts', { token: `${ADMIN_TOKEN}x` });
    expect(wrong.status).toBe(401);
    expect(wrong.body.error).toMatchObject({ type: 'authentication_error', code: 'invalid_api_key' });
    const customer = await raw(gw, 'GET', '/admin/accounts', { token: gw.firstKey });
    expect(customer.status).toBe(401);
    expect(customer.body.error.code).toBe('invalid_api_key');
    // The refused request created nothing.
    const create = await raw(gw, 'POST', '/admin/accounts', { token: 'nope', body: { email: 'sneaky@example.com' } });
    expect(create.status).toBe(401);
    const list = await gw.admin('GET', '/admin/accounts');
    expect(list.body.data.map((a: any) => a.email)).not.toContain('sneaky@example.com');
  });

  it('POST /admin/accounts returns 201 {id, email, plan, api_key}', async () => {
    const created = await gw.admin('POST', '/admin/accounts', { email: 'payg@example.com', plan: 'pay_as_you_go' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ id: expect.any(String), email: 'payg@example.com', plan: 'pay_as_you_go' });
    expect(created.body.api_key).toMatch(KEY_FORMAT);
    const full = await credits(gw, created.body.api_key);
    expect(full.body.billing.plan).toBe('pay_as_you_go');
    expect(full.body.balance.credits).toBe(5);
  });

  it('refuses a duplicate email (400 param email) and an unknown plan (400 param plan)', async () => {
    expect((await gw.admin('POST', '/admin/accounts', { email: 'dup@example.com' })).status).toBe(201);
    const dup = await gw.admin('POST', '/admin/accounts', { email: 'dup@example.com' });
    expect(dup.status).toBe(400);
    expect(dup.body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_request', param: 'email' });

    const plan = await gw.admin('POST', '/admin/accounts', { email: 'plan@example.com', plan: 'platinum' });
    expect(plan.status).toBe(400);
    expect(plan.body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_request', param: 'plan' });
    const list = await gw.admin('GET', '/admin/accounts');
    expect(list.body.data.map((a: any) => a.email)).not.toContain('plan@example.com');

    const missing = await gw.admin('POST', '/admin/accounts', {});
    expect(missing.status).toBe(400);
    expect(missing.body.error.param).toBe('email');
    const bad = await gw.admin('POST', '/admin/accounts', { email: 'not-an-email' });
    expect(bad.status).toBe(400);
    expect(bad.body.error.param).toBe('email');
  });

  it('creates test, read_only and project keys with models and spend_limit', async () => {
    const { id } = await gw.account();
    const test = await gw.admin('POST', `/admin/accounts/${id}/keys`, { environment: 'test', name: 'ci' });
    expect(test.status).toBe(201);
    expect(test.body.key).toMatch(TEST_KEY_FORMAT);
    expect(test.body).toMatchObject({ environment: 'test', permissions: 'full', name: 'ci', revoked: false });
    expect(test.body.hint).toBe(`${test.body.key.slice(0, 12)}...${test.body.key.slice(-4)}`);
    expect(test.body.id).toMatch(/^key_/);
    expect(typeof test.body.created).toBe('number');

    const readOnly = await gw.admin('POST', `/admin/accounts/${id}/keys`, { permissions: 'read_only' });
    expect(readOnly.status).toBe(201);
    expect(readOnly.body).toMatchObject({ environment: 'live', permissions: 'read_only' });
    expect(readOnly.body.key).toMatch(KEY_FORMAT);

    const project = await gw.admin('POST', `/admin/accounts/${id}/keys`, {
      permissions: 'project',
      models: ['sandbox/lorem'],
      spend_limit: 1.25,
    });
    expect(project.status).toBe(201);
    expect(project.body).toMatchObject({ permissions: 'project', models: ['sandbox/lorem'], spend_limit: 1.25 });
    expect(project.body.hint).toBe(`${project.body.key.slice(0, 12)}...${project.body.key.slice(-4)}`);

    const account = await gw.admin('GET', `/admin/accounts/${id}`);
    expect(account.status).toBe(200);
    const text = JSON.stringify(account.body);
    for (const key of [test.body.key, readOnly.body.key, project.body.key]) {
      expect(text).not.toContain(key);
      // Not even the random part of the key.
      expect(text).not.toContain(key.slice(8));
    }
    const keys = account.body.keys as any[];
    expect(keys).toHaveLength(4);
    for (const key of keys) {
      expect(key).not.toHaveProperty('key');
      expect(key.hint).toMatch(/^tg-(live|test)-\w{4}\.\.\.\w{4}$/);
    }
    expect(keys.find((k) => k.id === project.body.id)).toMatchObject({
      permissions: 'project',
      models: ['sandbox/lorem'],
      spend_limit: 1.25,
    });
  });

  it('refuses bad key requests with 400 naming the field', async () => {
    const { id } = await gw.account();
    const cases: Array<[unknown, string]> = [
      [{ environment: 'staging' }, 'environment'],
      [{ permissions: 'admin' }, 'permissions'],
      [{ spend_limit: 'lots' }, 'spend_limit'],
      [{ spend_limit: -1 }, 'spend_limit'],
      [{ models: 'sandbox/echo' }, 'models'],
    ];
    for (const [body, param] of cases) {
      const response = await gw.admin('POST', `/admin/accounts/${id}/keys`, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.error, JSON.stringify(body)).toMatchObject({ code: 'invalid_request', param });
    }
  });

  it('refuses bad credit amounts with 400 naming amount', async () => {
    const { id } = await gw.account();
    for (const amount of ['lots', null, true, 0, 0.0000000001, [1]]) {
      const response = await gw.admin('POST', `/admin/accounts/${id}/credits`, { amount });
      expect(response.status, JSON.stringify(amount)).toBe(400);
      expect(response.body.error, JSON.stringify(amount)).toMatchObject({
        type: 'invalid_request_error',
        code: 'invalid_request',
        param: 'amount',
      });
    }
    const missing = await gw.admin('POST', `/admin/accounts/${id}/credits`, {});
    expect(missing.status).toBe(400);
    expect(missing.body.error.param).toBe('amount');
    const account = await gw.admin('GET', `/admin/accounts/${id}`);
    expect(account.body.balance.credits).toBe(5);
  });

  it('PATCH changes plan, limits, auto-recharge and thresholds, visible in GET and /v1/credits', async () => {
    const { id, key } = await gw.account();
    const patched = await gw.admin('PATCH', `/admin/accounts/${id}`, {
      plan: 'pay_as_you_go',
      requests_per_minute: 42,
      daily_limit: 3.5,
      billing: { processor: 'invoice', monthly_ceiling: 100 },
      auto_recharge: { enabled: true, threshold: 1.5, amount: 10 },
      low_balance_thresholds: [2, 0.5],
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      plan: 'pay_as_you_go',
      billing: { processor: 'invoice', monthly_ceiling: 100 },
      auto_recharge: { enabled: true, threshold: 1.5, amount: 10 },
      low_balance_thresholds: [2, 0.5],
    });

    const account = await gw.admin('GET', `/admin/accounts/${id}`);
    expect(account.body).toMatchObject({
      plan: 'pay_as_you_go',
      overrides: { requests_per_minute: 42, tokens_per_minute: null, daily_limit: 3.5 },
      limits: { requests_per_minute: 42, tokens_per_minute: 2_000_000, daily_limit: 3.5 },
      auto_recharge: { enabled: true, threshold: 1.5, amount: 10 },
      low_balance_thresholds: [2, 0.5],
    });

    const full = await credits(gw, key);
    expect(full.status).toBe(200);
    expect(full.body.limits).toEqual({
      rate_limit: { requests_per_minute: 42, tokens_per_minute: 2_000_000 },
      daily_limit: { credits: 3.5, remaining: 3.5 },
    });
    expect(full.body.billing).toMatchObject({
      plan: 'pay_as_you_go',
      auto_recharge: { enabled: true, threshold: 1.5, amount: 10 },
    });

    // Back to the plan's values: null clears overrides; pay_as_you_go has no daily limit.
    const reset = await gw.admin('PATCH', `/admin/accounts/${id}`, { requests_per_minute: null, daily_limit: null });
    expect(reset.status).toBe(200);
    const again = await credits(gw, key);
    expect(again.body.limits).toEqual({ rate_limit: { requests_per_minute: 600, tokens_per_minute: 2_000_000 } });
  });

  it('PATCH refuses unknown fields, bad types and unknown plans with 400', async () => {
    const { id } = await gw.account();
    const unknown = await gw.admin('PATCH', `/admin/accounts/${id}`, { colour: 'blue' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_request' });

    const cases: Array<[unknown, string]> = [
      [{ plan: 'platinum' }, 'plan'],
      [{ requests_per_minute: 0 }, 'requests_per_minute'],
      [{ requests_per_minute: 'many' }, 'requests_per_minute'],
      [{ daily_limit: 'lots' }, 'daily_limit'],
      [{ daily_limit: -2 }, 'daily_limit'],
      [{ auto_recharge: { enabled: 'yes' } }, 'auto_recharge.enabled'],
      [{ auto_recharge: { threshold: 'one' } }, 'auto_recharge.threshold'],
      [{ billing: { processor: 'stripe', monthly_ceiling: 5 } }, 'billing.processor'],
      [{ billing: { processor: 'invoice', monthly_ceiling: -1 } }, 'billing.monthly_ceiling'],
    ];
    for (const [body, param] of cases) {
      const response = await gw.admin('PATCH', `/admin/accounts/${id}`, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.error, JSON.stringify(body)).toMatchObject({ code: 'invalid_request', param });
    }
    const account = await gw.admin('GET', `/admin/accounts/${id}`);
    expect(account.body.plan).toBe('free');
    expect(account.body.overrides).toEqual({ requests_per_minute: null, tokens_per_minute: null, daily_limit: null });
  });

  it('refuses unknown fields on every admin body, naming the field (a typo must not make a full key)', async () => {
    const { id } = await gw.account();
    const typo = await gw.admin('POST', `/admin/accounts/${id}/keys`, { permission: 'read_only' });
    expect(typo.status).toBe(400);
    expect(typo.body.error).toMatchObject({ code: 'invalid_request', param: 'permission' });
    const patch = await gw.admin('PATCH', `/admin/accounts/${id}`, { colour: 'blue' });
    expect(patch.body.error).toMatchObject({ code: 'invalid_request', param: 'colour' });
    expect(patch.body.error.message).toContain('colour');
    const nested = await gw.admin('PATCH', `/admin/accounts/${id}`, { auto_recharge: { treshold: 1 } });
    expect(nested.status).toBe(400);
    expect(nested.body.error.param).toBe('auto_recharge.treshold');
    const account = await gw.admin('POST', '/admin/accounts', { email: 'extra@example.com', plann: 'enterprise' });
    expect(account.status).toBe(400);
    expect(account.body.error.param).toBe('plann');
    const credit = await gw.admin('POST', `/admin/accounts/${id}/credits`, { amount: 1, notes: 'x' });
    expect(credit.status).toBe(400);
    expect(credit.body.error.param).toBe('notes');
    const keys = await gw.admin('GET', `/admin/accounts/${id}`);
    expect(keys.body.keys).toHaveLength(1);
    expect(keys.body.balance.credits).toBe(5);
  });

  it('POST keys without a body creates a default live full key', async () => {
    const { id } = await gw.account();
    const response = await raw(gw, 'POST', `/admin/accounts/${id}/keys`, { token: ADMIN_TOKEN });
    expect(response.status).toBe(201);
    expect(response.body).toMatchObject({ environment: 'live', permissions: 'full' });
    expect(response.body.key).toMatch(KEY_FORMAT);
  });

  it('project keys name catalog models only', async () => {
    const { id } = await gw.account();
    const unknown = await gw.admin('POST', `/admin/accounts/${id}/keys`, {
      permissions: 'project',
      models: ['sandbox/echo', 'no-such-model'],
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toMatchObject({ code: 'invalid_request', param: 'models' });
    expect(unknown.body.error.message).toContain('no-such-model');
  });

  it('email duplicates are found regardless of case', async () => {
    const first = await gw.admin('POST', '/admin/accounts', { email: 'Case@Example.com' });
    expect(first.status).toBe(201);
    const second = await gw.admin('POST', '/admin/accounts', { email: 'case@example.COM' });
    expect(second.status).toBe(400);
    expect(second.body.error.param).toBe('email');
  });

  it('amounts too large for the ledger are a 400, never a 500', async () => {
    const { id } = await gw.account();
    for (const amount of [1e10, 1e20, 1e300, -1e300]) {
      const response = await gw.admin('POST', `/admin/accounts/${id}/credits`, { amount });
      expect(response.status, String(amount)).toBe(400);
      expect(response.body.error.param).toBe('amount');
    }
    const big = await gw.admin('POST', `/admin/accounts/${id}/keys`, { permissions: 'project', spend_limit: 1e30 });
    expect(big.status).toBe(400);
    expect(big.body.error.param).toBe('spend_limit');
    for (const [body, param] of [
      [{ daily_limit: 1e30 }, 'daily_limit'],
      [{ auto_recharge: { enabled: true, threshold: 1, amount: 1e30 } }, 'auto_recharge.amount'],
      [{ low_balance_thresholds: [1e30] }, 'low_balance_thresholds'],
    ] as const) {
      const response = await gw.admin('PATCH', `/admin/accounts/${id}`, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.error.param).toBe(param);
    }
    // A large but sane top-up still works, and the ledger still sums to the balance.
    const ok = await gw.admin('POST', `/admin/accounts/${id}/credits`, { amount: 1_000_000 });
    expect(ok.status).toBe(200);
    expect(ok.body.balance.credits).toBe(1_000_005);
    const ledger = await gw.admin('GET', `/admin/accounts/${id}/ledger`);
    expect(ledgerSumNano(ledger.body.data)).toBe(nano(1_000_005));
  });

  it('unknown accounts and keys are 404 not_found', async () => {
    for (const [method, path, body] of [
      ['GET', '/admin/accounts/acct_missing', undefined],
      ['GET', '/admin/accounts/acct_missing/ledger', undefined],
      ['PATCH', '/admin/accounts/acct_missing', { plan: 'free' }],
      ['POST', '/admin/accounts/acct_missing/keys', {}],
      ['POST', '/admin/accounts/acct_missing/credits', { amount: 1 }],
      ['DELETE', '/admin/keys/key_missing', undefined],
    ] as const) {
      const response = await gw.admin(method, path, body);
      expect(response.status, `${method} ${path}`).toBe(404);
      expect(response.body.error, `${method} ${path}`).toMatchObject({
        type: 'invalid_request_error',
        code: 'not_found',
      });
    }
  });
});

describeEach(DIALECTS)("an account's credit purchases (%s)", (dialect) => {
  let stripe: MockStripe;
  let gw: TestGateway;
  beforeAll(async () => {
    stripe = await startMockStripe();
    gw = await startGateway({ dialect, env: stripe.env });
  });
  afterAll(async () => {
    await gw?.close();
    await stripe?.close();
  });

  it('GET /admin/accounts/{id}/purchases lists them newest first, paid ones with the receipt, a page at a time', async () => {
    const { id: accountId, key } = await gw.account();
    const buy = async (amount: number) =>
      (await raw(gw, 'POST', '/v1/credits/purchases', { token: key, body: { amount } })).body;
    const first = await buy(20);
    const second = await buy(12.5);
    const session = [...stripe.sessions.values()].find((s) => s.client_reference_id === first.id)!;
    expect(
      (await stripe.deliver(gw.url, stripe.event('checkout.session.completed', stripe.pay(session.id)))).status,
    ).toBe(200);

    const all = await gw.admin('GET', `/admin/accounts/${accountId}/purchases`);
    expect(all.status).toBe(200);
    expect(all.body.object).toBe('list');
    expect(all.body.data.map((p: any) => [p.id, p.amount, p.status])).toEqual([
      [second.id, 12.5, 'pending'],
      [first.id, 20, 'paid'],
    ]);
    expect(all.body.data[1].receipt_url).toMatch(/^https:\/\/pay\.stripe\.test\/receipts\//);
    expect(all.body.data[0].receipt_url).toBeNull();

    const page = await gw.admin('GET', `/admin/accounts/${accountId}/purchases?limit=1`);
    expect(page.body.data.map((p: any) => p.id)).toEqual([second.id]);
    expect(page.body.has_more).toBe(true);
    const rest = await gw.admin('GET', `/admin/accounts/${accountId}/purchases?limit=1&before=${second.id}`);
    expect(rest.body.data.map((p: any) => p.id)).toEqual([first.id]);

    expect((await gw.admin('GET', '/admin/accounts/acct_nope/purchases')).status).toBe(404);
    const badLimit = await gw.admin('GET', `/admin/accounts/${accountId}/purchases?limit=0`);
    expect(badLimit.status).toBe(400);
    expect(badLimit.body.error.param).toBe('limit');
    expect((await raw(gw, 'GET', `/admin/accounts/${accountId}/purchases`, { token: key })).status).toBe(401);
  });
});
