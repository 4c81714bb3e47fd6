/** The registration API of `/v1/webhooks`: bounds of spec 6.2, the secret shown once, permissions, SSRF refusal. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifyWebhook } from '../../src/webhooks/receiver/index.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { EMBEDDING_PRIVATE_IPV4 } from '../webhooks/embedded-addresses.js';
import { startReceiver, TEST_WEBHOOKS, type Receiver } from '../webhooks/receiver-server.js';
import { apiCall } from '../support/admin-call.js';

const SECRET = 'a-very-secret-webhook-secret-of-40-chars!';
let gateway: TestGateway;
let strict: TestGateway;
let receiver: Receiver;
let owner: { id: string; key: string };

beforeAll(async () => {
  [gateway, strict, receiver] = await Promise.all([
    startGateway({ overrides: { webhooks: TEST_WEBHOOKS } }),
    startGateway(), // allow_private_urls off, as in production
    startReceiver(),
  ]);
  owner = await gateway.account();
});
afterAll(async () => {
  await Promise.all([gateway?.close(), strict?.close(), receiver?.close()]);
});

const api = (target: TestGateway, key: string | undefined, method: string, path: string, body?: unknown) =>
  apiCall(target.baseURL, key, method, path, body);
const call = (method: string, path: string, body?: unknown, key = owner.key) => api(gateway, key, method, path, body);
const valid = () => ({ url: `${receiver.url}/hook`, secret: SECRET, events: [{ type: 'llm.completion' }] });

describe('POST /v1/webhooks', () => {
  it('creates a webhook with the defaults of spec 6.2 and shows the secret only once', async () => {
    const created = await call('POST', '/webhooks', valid());
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      object: 'webhook',
      url: `${receiver.url}/hook`,
      secret: SECRET,
      events: [{ type: 'llm.completion' }],
      headers: {},
      timeout: 10_000,
      retryConfig: { maxAttempts: 3, initialDelay: 1000, maxDelay: 30_000, backoffMultiplier: 2 },
    });
    expect(created.body.id).toMatch(/^wh_/);
    const one = await call('GET', `/webhooks/${created.body.id}`);
    expect(one.status).toBe(200);
    expect(one.body.secret).toBeUndefined();
    const list = await call('GET', '/webhooks');
    expect(list.body.data.map((w: any) => w.id)).toContain(created.body.id);
    expect(JSON.stringify(list.body)).not.toContain(SECRET);
  });

  it('keeps filters, custom headers, timeout and retryConfig as given (bounds inclusive)', async () => {
    const body = {
      ...valid(),
      events: [{ type: 'llm.completion', filters: { 'data.model': 'gpt-4o-mini' } }, { type: 'credit.low_balance' }],
      headers: { 'X-Tenant': 'acme' },
      timeout: 30_000,
      retryConfig: { maxAttempts: 10, initialDelay: 100, maxDelay: 60_000, backoffMultiplier: 5 },
    };
    const created = await call('POST', '/webhooks', body);
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      events: body.events,
      headers: body.headers,
      timeout: 30_000,
      retryConfig: body.retryConfig,
    });
    const low = await call('POST', '/webhooks', {
      ...valid(),
      timeout: 1000,
      retryConfig: { maxAttempts: 1, initialDelay: 10_000, maxDelay: 1000, backoffMultiplier: 1 },
    });
    expect(low.status).toBe(201);
  });

  const violations: Array<[string, (b: any) => void, string]> = [
    ['url missing', (b) => delete b.url, 'url'],
    ['url not a URI', (b) => (b.url = 'not a url'), 'url'],
    ['url not http(s)', (b) => (b.url = 'ftp://example.com/x'), 'url'],
    ['secret missing', (b) => delete b.secret, 'secret'],
    ['secret of 31 characters', (b) => (b.secret = 'x'.repeat(31)), 'secret'],
    ['events missing', (b) => delete b.events, 'events'],
    ['events empty', (b) => (b.events = []), 'events'],
    ['event without type', (b) => (b.events = [{ filters: {} }]), 'events[0].type'],
    ['unknown event type', (b) => (b.events = [{ type: 'llm.completion' }, { type: 'llm.nope' }]), 'events[1].type'],
    ['filters not an object', (b) => (b.events = [{ type: 'llm.completion', filters: 'x' }]), 'events[0].filters'],
    ['header value not a string', (b) => (b.headers = { 'X-A': 1 }), 'headers.X-A'],
    ['reserved header', (b) => (b.headers = { 'X-Webhook-Signature': 'forged' }), 'headers.X-Webhook-Signature'],
    ['timeout below 1000', (b) => (b.timeout = 999), 'timeout'],
    ['timeout above 30000', (b) => (b.timeout = 30_001), 'timeout'],
    ['timeout not an integer', (b) => (b.timeout = 1500.5), 'timeout'],
    ['maxAttempts 0', (b) => (b.retryConfig = { maxAttempts: 0 }), 'retryConfig.maxAttempts'],
    ['maxAttempts 11', (b) => (b.retryConfig = { maxAttempts: 11 }), 'retryConfig.maxAttempts'],
    ['initialDelay 99', (b) => (b.retryConfig = { initialDelay: 99 }), 'retryConfig.initialDelay'],
    ['initialDelay 10001', (b) => (b.retryConfig = { initialDelay: 10_001 }), 'retryConfig.initialDelay'],
    ['maxDelay 999', (b) => (b.retryConfig = { maxDelay: 999 }), 'retryConfig.maxDelay'],
    ['maxDelay 60001', (b) => (b.retryConfig = { maxDelay: 60_001 }), 'retryConfig.maxDelay'],
    ['backoffMultiplier 0.5', (b) => (b.retryConfig = { backoffMultiplier: 0.5 }), 'retryConfig.backoffMultiplier'],
    ['backoffMultiplier 5.5', (b) => (b.retryConfig = { backoffMultiplier: 5.5 }), 'retryConfig.backoffMultiplier'],
    ['unknown retryConfig field', (b) => (b.retryConfig = { attempts: 3 }), 'retryConfig.attempts'],
    ['unknown field', (b) => (b.colour = 'blue'), 'colour'],
  ];
  it.each(violations)('400 naming the field: %s', async (_name, mutate, param) => {
    const body = valid();
    mutate(body);
    const response = await call('POST', '/webhooks', body);
    expect(response.status).toBe(400);
    expect(response.body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_request', param });
    expect(response.body.error.message).toContain(
      param
        .split('.')
        .pop()!
        .replace(/\[\d+\]/, ''),
    );
  });

  it('answers a body that is not an object with 400', async () => {
    expect((await call('POST', '/webhooks', [1, 2])).status).toBe(400);
  });
});

describe('GET, PATCH, DELETE /v1/webhooks/{id}', () => {
  it('updates only the given fields, merges retryConfig, enforces the bounds, and deletes', async () => {
    const { body: created } = await call('POST', '/webhooks', valid());
    const patched = await call('PATCH', `/webhooks/${created.id}`, { timeout: 2000, retryConfig: { maxAttempts: 5 } });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({
      url: created.url,
      timeout: 2000,
      retryConfig: { maxAttempts: 5, initialDelay: 1000, maxDelay: 30_000, backoffMultiplier: 2 },
    });
    expect(patched.body.secret).toBeUndefined();
    const bad = await call('PATCH', `/webhooks/${created.id}`, { retryConfig: { backoffMultiplier: 6 } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.param).toBe('retryConfig.backoffMultiplier');
    expect((await call('DELETE', `/webhooks/${created.id}`)).body).toEqual({
      id: created.id,
      object: 'webhook',
      deleted: true,
    });
    const gone = await call('GET', `/webhooks/${created.id}`);
    expect(gone.status).toBe(404);
    expect(gone.body.error).toMatchObject({ code: 'not_found', param: 'id' });
  });

  it("hides one account's webhooks from another (404) and refuses keys without full permission", async () => {
    const { body: created } = await call('POST', '/webhooks', valid());
    const other = await gateway.account();
    expect((await call('GET', `/webhooks/${created.id}`, undefined, other.key)).status).toBe(404);
    expect((await call('DELETE', `/webhooks/${created.id}`, undefined, other.key)).status).toBe(404);
    expect((await call('GET', '/webhooks', undefined, other.key)).body.data).toEqual([]);
    const readOnly = await gateway.key(owner.id, { permissions: 'read_only' });
    const project = await gateway.key(owner.id, { permissions: 'project' });
    for (const key of [readOnly.key, project.key]) {
      const denied = await call('GET', '/webhooks', undefined, key);
      expect(denied.status).toBe(403);
      expect(denied.body.error.code).toBe('permission_denied');
    }
    expect((await api(gateway, undefined, 'GET', '/webhooks')).body.error.code).toBe('missing_api_key');
  });
});

describe('POST /v1/webhooks/{id}/test', () => {
  it('sends one signed webhook.test event at once and lists it among the deliveries', async () => {
    const { body: created } = await call('POST', '/webhooks', { ...valid(), url: `${receiver.url}/test-me` });
    const result = await call('POST', `/webhooks/${created.id}/test`);
    expect(result.status).toBe(200);
    expect(result.body).toMatchObject({ object: 'webhook_test', success: true, status: 200, error: null });
    const [delivery] = receiver.received.filter((r) => r.path === '/test-me');
    const verified = verifyWebhook(delivery!.body, delivery!.headers, SECRET);
    expect(verified.ok).toBe(true);
    if (verified.ok) expect(verified.event).toMatchObject({ event: 'webhook.test', data: { webhookId: created.id } });
    const deliveries = await call('GET', `/webhooks/${created.id}/deliveries`);
    expect(deliveries.body.data).toHaveLength(1);
    expect(deliveries.body.data[0]).toMatchObject({
      object: 'webhook_delivery',
      event: 'webhook.test',
      status: 'succeeded',
      attempts: 1,
      last_status: 200,
    });
  });

  it('reports a failing receiver without retrying it', async () => {
    const failing = await startReceiver(() => 503);
    try {
      const { body: created } = await call('POST', '/webhooks', { ...valid(), url: failing.url });
      const result = await call('POST', `/webhooks/${created.id}/test`);
      expect(result.body).toMatchObject({ success: false, status: 503, delivery: { status: 'failed' } });
      await new Promise((r) => setTimeout(r, 300));
      expect(failing.received).toHaveLength(1);
    } finally {
      await failing.close();
    }
  });
});

describe('SSRF: webhooks.allow_private_urls off', () => {
  it('refuses URLs that resolve to loopback, private, link-local or metadata addresses with 400 on url', async () => {
    const account = await strict.account();
    for (const url of [
      receiver.url,
      'http://localhost:9/x',
      'http://[::1]:9/x',
      'http://10.0.0.8/x',
      'http://192.168.1.20/x',
      'http://172.20.0.1/x',
      'http://169.254.169.254/latest/meta-data/',
      'http://[fd00:ec2::254]/',
      'http://[::ffff:127.0.0.1]/x',
      'http://0.0.0.0:9/x',
    ]) {
      const response = await api(strict, account.key, 'POST', '/webhooks', { ...valid(), url });
      expect(response.status, url).toBe(400);
      expect(response.body.error, url).toMatchObject({ code: 'invalid_request', param: 'url' });
    }
  });

  it('refuses every IPv6 form that embeds a non-public IPv4 address, and accepts a public IPv6 address', async () => {
    const account = await strict.account();
    for (const address of EMBEDDING_PRIVATE_IPV4) {
      const url = `http://[${address}]/hook`;
      const response = await api(strict, account.key, 'POST', '/webhooks', { ...valid(), url });
      expect(response.status, url).toBe(400);
      expect(response.body.error, url).toMatchObject({ code: 'invalid_request', param: 'url' });
    }
    for (const url of ['http://[2606:4700:4700::1111]/hook', 'https://[64:ff9b::808:808]/hook']) {
      expect((await api(strict, account.key, 'POST', '/webhooks', { ...valid(), url })).status, url).toBe(201);
    }
  });
});
