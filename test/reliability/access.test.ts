/**
 * Keys and access: every route x every kind of credential gets the contract's status; keys are stored only as
 * HMACs; a revoked key is refused at once; test keys never move a live balance; no full key reaches the logs.
 */
import { createHmac } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/observability/index.js';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../support/gateway.js';
import { apiCall } from '../support/admin-call.js';

type Who = 'full' | 'readOnly' | 'project' | 'test' | 'management' | 'none' | 'revoked' | 'admin';
const WHO: Who[] = ['full', 'readOnly', 'project', 'test', 'management', 'none', 'revoked', 'admin'];

/** Expected status per credential; `key` = full, readOnly, project, test and management alike. */
type Expect = Partial<Record<Who | 'key' | 'all', number>>;
const status = (e: Expect, who: Who): number => {
  const isKey = who === 'full' || who === 'readOnly' || who === 'project' || who === 'test' || who === 'management';
  return (
    e[who] ??
    (isKey ? e.key : undefined) ??
    e.all ??
    (who === 'none' || who === 'revoked' || who === 'admin' ? 401 : NaN)
  );
};

const chat = (model: string) => ({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 });
const hook = {
  url: 'http://127.0.0.1:9/hook',
  secret: 'a-very-secret-webhook-secret-of-40-chars!',
  events: [{ type: 'llm.completion' }],
};
const MANAGE = { full: 200, test: 200, readOnly: 403, project: 403, management: 403 };
const MISSING = { full: 404, test: 404, readOnly: 403, project: 403, management: 403 };
/** /v1/keys: management and full keys. */
const KEYS = { full: 200, test: 200, management: 200, readOnly: 403, project: 403 };
const KEYS_MISSING = { full: 404, test: 404, management: 404, readOnly: 403, project: 403 };
const ADMIN_ONLY = { key: 401 };

/** [method, path, body, expected]. `:acct` is the account's id. */
const ROUTES: Array<[string, string, unknown, Expect]> = [
  [
    'POST',
    '/v1/chat/completions',
    chat('sandbox/echo'),
    { full: 200, project: 200, test: 200, readOnly: 403, management: 403 },
  ],
  [
    'POST',
    '/v1/chat/completions',
    chat('sandbox/lorem'),
    { full: 200, project: 403, test: 200, readOnly: 403, management: 403 },
  ],
  ['GET', '/v1/models', undefined, { key: 200 }],
  ['GET', '/v1/models/sandbox/echo', undefined, { key: 200 }],
  ['GET', '/v1/credits', undefined, { key: 200 }],
  // Every key reads what its requests cost: the account's (a project key, its own), by any id; unknown ids are 404.
  ['GET', '/v1/key', undefined, { key: 200 }],
  ['GET', '/v1/usage', undefined, { key: 200 }],
  ['GET', '/v1/usage?format=csv&group_by=model', undefined, { key: 200 }],
  ['GET', '/v1/generation?id=req_nope', undefined, { key: 404 }],
  // Purchasing is off on this gateway (no Stripe key): a full key hears so (400), the others are refused first.
  [
    'POST',
    '/v1/credits/purchases',
    { amount: 20 },
    { full: 400, test: 400, readOnly: 403, project: 403, management: 403 },
  ],
  ['GET', '/v1/credits/purchases', undefined, MANAGE],
  ['GET', '/v1/credits/purchases/cp_nope', undefined, MISSING],
  // Stripe's deliveries carry a signature, not a key: refused (400) whatever credential comes with them.
  ['POST', '/webhooks/stripe', {}, { all: 400 }],
  ['POST', '/v1/webhooks', hook, { full: 201, test: 201, readOnly: 403, project: 403, management: 403 }],
  ['GET', '/v1/webhooks', undefined, MANAGE],
  ['GET', '/v1/webhooks/dead-letters', undefined, MANAGE],
  ['POST', '/v1/webhooks/dead-letters/dlq_nope/replay', undefined, MISSING],
  ['GET', '/v1/webhooks/whk_nope', undefined, MISSING],
  ['PATCH', '/v1/webhooks/whk_nope', { description: 'x' }, MISSING],
  ['DELETE', '/v1/webhooks/whk_nope', undefined, MISSING],
  ['GET', '/v1/webhooks/whk_nope/deliveries', undefined, MISSING],
  ['POST', '/v1/webhooks/whk_nope/test', undefined, MISSING],
  // A key's keys: never a management key over /v1/keys; other accounts' (and unknown) ids are 404.
  ['POST', '/v1/keys', { name: 'x', permissions: 'read_only' }, { ...KEYS, full: 201, test: 201, management: 201 }],
  ['POST', '/v1/keys', { permissions: 'management' }, { ...KEYS, full: 403, test: 403, management: 403 }],
  ['GET', '/v1/keys', undefined, KEYS],
  // The audit log: full and management keys; a bad page size is a 400 only to those who may read it.
  ['GET', '/v1/audit', undefined, { full: 200, test: 200, management: 200, readOnly: 403, project: 403 }],
  ['GET', '/v1/audit?limit=101', undefined, { full: 400, test: 400, management: 400, readOnly: 403, project: 403 }],
  ['GET', '/v1/keys/key_nope', undefined, KEYS_MISSING],
  ['PATCH', '/v1/keys/key_nope', { name: 'x' }, KEYS_MISSING],
  ['DELETE', '/v1/keys/key_nope', undefined, KEYS_MISSING],
  ['PATCH', '/admin/keys/key_nope', { name: 'x' }, { ...ADMIN_ONLY, admin: 404 }],
  ['GET', '/admin/accounts', undefined, { ...ADMIN_ONLY, admin: 200 }],
  ['POST', '/admin/accounts', { email: 'new-@example.com' }, { ...ADMIN_ONLY, admin: 201 }],
  ['GET', '/admin/accounts/:acct', undefined, { ...ADMIN_ONLY, admin: 200 }],
  ['PATCH', '/admin/accounts/:acct', { plan: 'free' }, { ...ADMIN_ONLY, admin: 200 }],
  ['POST', '/admin/accounts/:acct/keys', { name: 'x' }, { ...ADMIN_ONLY, admin: 201 }],
  ['POST', '/admin/accounts/acct_nope/credits', { amount: 1 }, { ...ADMIN_ONLY, admin: 404 }],
  ['GET', '/admin/accounts/:acct/ledger', undefined, { ...ADMIN_ONLY, admin: 200 }],
  ['GET', '/admin/accounts/:acct/purchases', undefined, { ...ADMIN_ONLY, admin: 200 }],
  ['GET', '/admin/accounts/:acct/audit', undefined, { ...ADMIN_ONLY, admin: 200 }],
  ['GET', '/admin/accounts/acct_nope/audit', undefined, { ...ADMIN_ONLY, admin: 404 }],
  ['DELETE', '/admin/keys/key_nope', undefined, { ...ADMIN_ONLY, admin: 404 }],
  ['GET', '/metrics', undefined, { ...ADMIN_ONLY, admin: 200 }],
  ['GET', '/health', undefined, { all: 200 }],
  ['GET', '/ready', undefined, { all: 200 }],
  ['GET', '/v1/openapi.json', undefined, { all: 200 }],
  // The dashboard takes a session cookie (and CSRF token), never an API key or the admin token.
  ['GET', '/dashboard/api/session', undefined, { all: 200 }],
  ['GET', '/dashboard/api/overview', undefined, { all: 401 }],
  ['GET', '/dashboard/api/keys', undefined, { all: 401 }],
  ['GET', '/dashboard/api/webhooks', undefined, { all: 401 }],
  ['POST', '/dashboard/api/keys', { name: 'x' }, { all: 403 }],
  ['GET', '/dashboard/api/purchasing', undefined, { all: 401 }],
  ['GET', '/dashboard/api/purchases', undefined, { all: 401 }],
  ['GET', '/dashboard/api/recharges', undefined, { all: 401 }],
  ['GET', '/dashboard/api/purchases/cp_nope', undefined, { all: 401 }],
  ['POST', '/dashboard/api/purchases', { amount: 20 }, { all: 403 }],
];

describe('keys and access', () => {
  let gateway: TestGateway;
  const logs: string[] = [];
  const keys: Partial<Record<Who, string>> = {};
  const fullKeys: string[] = [];
  let accountId: string;

  beforeAll(async () => {
    // The production logger (same redaction), at its most verbose, writing into memory.
    const logger = createLogger('trace', { write: (line: string) => void logs.push(line) });
    // Every API key is tried on every admin route: far more wrong admin tokens than the per-address throttle allows.
    gateway = await startGateway({
      logger,
      overrides: { webhooks: { allow_private_urls: true }, server: { admin_auth_max_failures: 1_000 } },
    });
    const { id, key } = await gateway.account({ plan: 'pay_as_you_go' });
    accountId = id;
    // Every credential on every route is far more than a minute's requests of the plan.
    await gateway.admin('PATCH', `/admin/accounts/${id}`, { requests_per_minute: 5_000 });
    keys.full = key;
    keys.readOnly = (await gateway.key(id, { permissions: 'read_only' })).key;
    keys.project = (await gateway.key(id, { permissions: 'project', models: ['sandbox/echo'], spend_limit: 1 })).key;
    keys.test = (await gateway.key(id, { environment: 'test' })).key;
    keys.management = (await gateway.key(id, { permissions: 'management' })).key;
    const revoked = await gateway.key(id, {});
    await gateway.admin('DELETE', `/admin/keys/${revoked.id}`);
    keys.revoked = revoked.key;
    keys.admin = ADMIN_TOKEN;
    keys.none = undefined;
    fullKeys.push(gateway.firstKey, keys.full, keys.readOnly, keys.project, keys.test, keys.management, keys.revoked);
  });
  afterAll(async () => {
    await gateway?.close();
  });

  const call = (method: string, path: string, who: Who, body?: unknown) =>
    apiCall(gateway.url, keys[who], method, path.replace(':acct', accountId), body);

  it(`gives every route x credential its status (${ROUTES.length} routes x ${WHO.length} credentials)`, async () => {
    const wrong: string[] = [];
    let n = 0;
    for (const [method, path, body, expected] of ROUTES) {
      for (const who of WHO) {
        const payload = path === '/admin/accounts' && method === 'POST' ? { email: `new-${++n}@example.com` } : body;
        const { status: got, body: answer } = await call(method, path, who, payload);
        const want = status(expected, who);
        if (got !== want)
          wrong.push(`${method} ${path} as ${who}: ${got}, expected ${want} ${JSON.stringify(answer).slice(0, 160)}`);
        if (got >= 400 && !(answer?.error && 'param' in answer.error && typeof answer.error.code === 'string'))
          wrong.push(`${method} ${path} as ${who}: no error envelope`);
        if (got === 401) expect(answer.error.type).toBe('authentication_error');
        if (got === 403 && path.startsWith('/v1'))
          expect(answer.error).toMatchObject({ type: 'permission_error', code: 'permission_denied' });
      }
    }
    expect(wrong).toEqual([]);
  });

  it('shows read-only and project keys only the simplified credits, and holds a project key to its spend limit', async () => {
    const full = await call('GET', '/v1/credits', 'full');
    expect(Object.keys(full.body).length).toBeGreaterThan(2);
    for (const who of ['readOnly', 'project'] as const)
      expect(Object.keys((await call('GET', '/v1/credits', who)).body).sort()).toEqual(['balance', 'object']);
    const limited = await gateway.key(accountId, { permissions: 'project', spend_limit: 0.000001 });
    const response = await fetch(`${gateway.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${limited.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'sandbox/lorem',
        messages: [{ role: 'user', content: 'a long prompt '.repeat(50) }],
      }),
    });
    expect(response.status).toBe(403);
  });

  it('refuses a revoked key at once', async () => {
    const { id, key } = await gateway.key(accountId, {});
    expect((await call('GET', '/v1/models', 'none')).status).toBe(401);
    const use = () => fetch(`${gateway.baseURL}/models`, { headers: { authorization: `Bearer ${key}` } });
    expect((await use()).status).toBe(200);
    expect((await gateway.admin('DELETE', `/admin/keys/${id}`)).status).toBe(200);
    const refused = await use();
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as any).error.code).toBe('invalid_api_key');
  });

  it('never moves a live balance with a test key', async () => {
    const before = (await gateway.admin('GET', `/admin/accounts/${accountId}`)).body.balance.credits;
    const client = gateway.client(keys.test!);
    for (let i = 0; i < 5; i++) {
      const answer = await client.chat.completions.create({
        model: 'sandbox/lorem',
        messages: [{ role: 'user', content: `test ${i}` }],
        max_tokens: 50,
      });
      expect((answer.usage as any).cost).toBe(0);
    }
    const stream = await client.chat.completions.create({
      model: 'gpt-6-luna',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    for await (const chunk of stream) if (chunk.usage) expect((chunk.usage as any).cost).toBe(0);
    await new Promise((r) => setTimeout(r, 50));
    expect((await gateway.admin('GET', `/admin/accounts/${accountId}`)).body.balance.credits).toBe(before);
  });

  it('stores keys only as HMAC-SHA-256 hashes: no full key (nor its secret part) anywhere in the database', () => {
    const db = new Database(join(gateway.database.dataDir, 'tollgate.db'), { readonly: true });
    try {
      const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>;
      let cells = 0;
      const dump: string[] = [];
      for (const { name } of tables) {
        for (const row of db.prepare(`SELECT * FROM "${name}"`).all() as Array<Record<string, unknown>>) {
          for (const value of Object.values(row)) {
            cells++;
            dump.push(String(value));
          }
        }
      }
      const text = dump.join('\n');
      expect(cells).toBeGreaterThan(100);
      for (const key of fullKeys) {
        expect(text.includes(key)).toBe(false);
        expect(text.includes(key.slice(-32, -4))).toBe(false);
      }
      const secret = (db.prepare("SELECT value FROM meta WHERE key = 'key_secret'").get() as { value: string }).value;
      const hashes = new Set(
        (db.prepare('SELECT key_hash FROM api_keys').all() as Array<{ key_hash: string }>).map((r) => r.key_hash),
      );
      for (const key of fullKeys) expect(hashes.has(createHmac('sha256', secret).update(key).digest('hex'))).toBe(true);
    } finally {
      db.close();
    }
  });

  it('refuses near-miss keys and admin tokens alike (hash lookups, constant-time token comparison)', async () => {
    const near = [
      keys.full!.slice(0, -1) + (keys.full!.endsWith('A') ? 'B' : 'A'),
      keys.full!.toUpperCase(),
      keys.full!.replace('-live-', '-test-'),
    ];
    for (const key of near)
      expect((await fetch(`${gateway.baseURL}/models`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(
        401,
      );
    for (const token of [ADMIN_TOKEN.slice(0, -1), `${ADMIN_TOKEN}x`, ADMIN_TOKEN.toUpperCase(), '']) {
      const response = await fetch(`${gateway.url}/admin/accounts`, { headers: { authorization: `Bearer ${token}` } });
      expect(response.status).toBe(401);
    }
  });

  it('writes no full key to the logs (captured at trace level after all of the above)', () => {
    const text = logs.join('');
    expect(logs.length).toBeGreaterThan(10);
    expect(text).toContain('chat completion');
    for (const key of fullKeys) {
      expect(text.includes(key), 'a full key is in the logs').toBe(false);
      expect(text.includes(key.slice(-32, -4)), "a key's secret part is in the logs").toBe(false);
    }
    expect(text.includes(ADMIN_TOKEN)).toBe(false);
  });
});
