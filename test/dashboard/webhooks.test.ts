/** The dashboard's Webhooks section over HTTP: endpoints, recent deliveries, dead letters and replay, per account. */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { DashboardClient, uniqueEmail } from './client.js';
import { describeEach } from '../support/backends.js';
import { DIALECTS } from '../support/databases.js';

const SECRET = 'whsec_' + 'x'.repeat(40);

describeEach(DIALECTS)('dashboard webhooks on %s', (dialect) => {
  let gateway: TestGateway;
  let receiver: Server;
  let receiverUrl: string;
  /** What the receiver answers; every body it gets is kept. */
  let answer = 500;
  const received: string[] = [];

  beforeAll(async () => {
    receiver = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => (body += chunk));
      request.on('end', () => {
        received.push(body);
        response.statusCode = answer;
        response.end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    gateway = await startGateway({
      dialect,
      overrides: { webhooks: { allow_private_urls: true, poll_interval_ms: 100 } },
    });
  });
  afterAll(async () => {
    await gateway?.close();
    receiver?.close();
  });

  test(
    'add an endpoint, see a failed delivery become a dead letter, replay it, delete the endpoint',
    { timeout: 20_000 },
    async () => {
      const client = new DashboardClient(gateway.url);
      const { body: account } = await client.signUp(uniqueEmail('hooks'));
      expect((await client.request('GET', '/webhooks')).body.data).toEqual([]);

      const created = await client.request('POST', '/webhooks', {
        url: receiverUrl,
        secret: SECRET,
        events: [{ type: 'llm.completion' }],
        retryConfig: { maxAttempts: 1 },
        description: 'ci',
      });
      expect(created.status).toBe(201);
      expect(created.body.secret).toBe(SECRET);
      const listed = (await client.request('GET', '/webhooks')).body.data;
      expect(listed.map((w: { id: string; url: string }) => [w.id, w.url])).toEqual([[created.body.id, receiverUrl]]);
      expect(JSON.stringify(listed)).not.toContain(SECRET);

      // The test button: one attempt now, recorded among the deliveries.
      const tested = await client.request('POST', `/webhooks/${created.body.id}/test`);
      expect([tested.status, tested.body.success, tested.body.status]).toEqual([200, false, 500]);

      await gateway
        .client(account.first_key.key)
        .chat.completions.create({ model: 'sandbox/echo', messages: [{ role: 'user', content: 'hook me' }] });
      let dead: Array<{ id: string; event: string; attempts: number; last_error: string }> = [];
      await expect
        .poll(async () => (dead = (await client.request('GET', '/webhooks/dead-letters')).body.data).length, {
          timeout: 10_000,
        })
        .toBe(1);
      expect(dead[0]).toMatchObject({ event: 'llm.completion', attempts: 1 });
      expect(dead[0]!.last_error).toContain('HTTP 500');
      const recent = (await client.request('GET', '/webhooks/deliveries')).body.data;
      expect(recent.map((d: { event: string; status: string }) => `${d.event} ${d.status}`)).toEqual([
        'llm.completion dead',
        'webhook.test failed',
      ]);
      expect(recent[0]).not.toHaveProperty('payload');

      answer = 200;
      const replayed = await client.request('POST', `/webhooks/dead-letters/${dead[0]!.id}/replay`);
      expect(replayed.status).toBe(202);
      await expect
        .poll(async () => (await client.request('GET', '/webhooks/deliveries')).body.data[0]?.status, {
          timeout: 10_000,
        })
        .toBe('succeeded');
      expect((await client.request('GET', '/webhooks/dead-letters')).body.data).toEqual([]);
      const again = await client.request('POST', `/webhooks/dead-letters/${dead[0]!.id}/replay`);
      expect([again.status, again.body.error.param]).toEqual([400, 'id']);
      expect(received.some((body) => body.includes('"llm.completion"'))).toBe(true);

      expect((await client.request('DELETE', `/webhooks/${created.body.id}`)).status).toBe(200);
      expect((await client.request('GET', '/webhooks')).body.data).toEqual([]);
    },
  );

  test('bad registrations are a 400 naming the field', async () => {
    const client = new DashboardClient(gateway.url);
    await client.signUp(uniqueEmail('badhooks'));
    for (const [body, param] of [
      [{ url: 'ftp://example.com', secret: SECRET, events: [{ type: 'llm.completion' }] }, 'url'],
      [{ url: receiverUrl, secret: 'short', events: [{ type: 'llm.completion' }] }, 'secret'],
      [{ url: receiverUrl, secret: SECRET, events: [{ type: 'llm.telepathy' }] }, 'events[0].type'],
      [
        { url: receiverUrl, secret: SECRET, events: [{ type: 'llm.completion' }], retryConfig: { maxAttempts: 11 } },
        'retryConfig.maxAttempts',
      ],
    ] as const) {
      const response = await client.request('POST', '/webhooks', body);
      expect([response.status, response.body.error.type, response.body.error.param]).toEqual([
        400,
        'invalid_request_error',
        param,
      ]);
    }
  });

  test("another account's endpoints and dead letters are unknown to it; every route needs a session and CSRF token", async () => {
    const owner = new DashboardClient(gateway.url);
    await owner.signUp(uniqueEmail('owner'));
    const hook = (
      await owner.request('POST', '/webhooks', { url: receiverUrl, secret: SECRET, events: [{ type: '*' }] })
    ).body;
    const stranger = new DashboardClient(gateway.url);
    await stranger.signUp(uniqueEmail('stranger'));
    expect((await stranger.request('GET', '/webhooks')).body.data).toEqual([]);
    for (const [method, path] of [
      ['DELETE', `/webhooks/${hook.id}`],
      ['POST', `/webhooks/${hook.id}/test`],
      ['POST', '/webhooks/dead-letters/whd_nothing/replay'],
    ] as const) {
      const response = await stranger.request(method, path);
      expect([path, response.status, response.body.error.code]).toEqual([path, 404, 'not_found']);
    }
    const forged = await owner.request('DELETE', `/webhooks/${hook.id}`, undefined, { 'x-csrf-token': '' });
    expect([forged.status, forged.body.error.code]).toEqual([403, 'permission_denied']);
    expect((await owner.request('GET', '/webhooks')).body.data).toHaveLength(1);
    const anonymous = new DashboardClient(gateway.url);
    for (const path of ['/webhooks', '/webhooks/deliveries', '/webhooks/dead-letters']) {
      expect((await anonymous.request('GET', path)).status).toBe(401);
    }
  });
});
