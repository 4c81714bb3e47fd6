/**
 * One delivery attempt against a real loopback receiver, with DNS replaced: the host is resolved exactly once per
 * attempt, the connection goes to that very address (a name the system resolver does not know still arrives),
 * a rebinding answer is refused before any connection, and the outcome classes of spec 6.2 hold.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';

const dns = vi.hoisted(() => ({
  answers: [] as Array<Array<{ address: string; family: number }>>,
  calls: [] as string[],
}));
vi.mock('node:dns/promises', () => ({
  lookup: (host: string) => {
    dns.calls.push(host);
    const answer = dns.answers.shift();
    if (!answer)
      return Promise.reject(Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' }));
    return Promise.resolve(answer);
  },
}));

const { attemptDelivery } = await import('../../src/webhooks/deliver.js');
const { verifyWebhook } = await import('../../src/webhooks/receiver/index.js');
const { startReceiver } = await import('./receiver-server.js');
const { EMBEDDING_PRIVATE_IPV4 } = await import('./embedded-addresses.js');

const SECRET = 'deliver-test-secret-0123456789-0123456789';
const PAYLOAD = JSON.stringify({ id: 'evt_1', timestamp: new Date().toISOString(), event: 'webhook.test', data: {} });
const meta = { eventId: 'evt_1', eventType: 'webhook.test' };
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let port: number;

beforeAll(async () => {
  receiver = await startReceiver((r) => (r.path === '/gone' ? 410 : r.path === '/moved' ? 307 : 200));
  port = Number(new URL(receiver.url).port);
});
afterAll(async () => receiver?.close());
beforeEach(() => {
  dns.answers = [];
  dns.calls = [];
});

const target = (host: string, path = '/hook') => ({
  url: `http://${host}:${port}${path}`,
  secret: SECRET,
  headers: { 'X-Tenant': 'acme' },
  timeoutMs: 2000,
});

describe('attemptDelivery', () => {
  it('resolves the host once and connects to that address (a name unknown to the system resolver)', async () => {
    dns.answers.push([{ address: '127.0.0.1', family: 4 }]);
    const outcome = await attemptDelivery(target('hooks.tollgate.invalid'), PAYLOAD, meta, true);
    expect(outcome).toMatchObject({ ok: true, status: 200, error: null });
    expect(dns.calls).toEqual(['hooks.tollgate.invalid']);
    const delivery = receiver.received.at(-1)!;
    expect(delivery.headers.host).toBe(`hooks.tollgate.invalid:${port}`);
    expect(delivery.headers['x-tenant']).toBe('acme');
    expect(delivery.body).toBe(PAYLOAD);
    expect(verifyWebhook(delivery.body, delivery.headers, SECRET).ok).toBe(true);
  });

  it('refuses a name that resolves inside when private URLs are not allowed, without connecting (not retried)', async () => {
    const before = receiver.received.length;
    for (const address of ['127.0.0.1', '169.254.169.254', '10.1.2.3']) {
      dns.answers.push([
        { address: '93.184.215.14', family: 4 },
        { address, family: 4 },
      ]);
      const outcome = await attemptDelivery(target('rebind.tollgate.invalid'), PAYLOAD, meta, false);
      expect(outcome, address).toMatchObject({ ok: false, retryable: false, status: null });
      expect(outcome.error).toContain(address);
    }
    expect(dns.calls).toHaveLength(3);
    expect(receiver.received).toHaveLength(before);
  });

  it('refuses a name whose AAAA answer embeds a non-public IPv4 address, without connecting (not retried)', async () => {
    const before = receiver.received.length;
    for (const address of EMBEDDING_PRIVATE_IPV4) {
      dns.answers.push([{ address, family: 6 }]);
      const outcome = await attemptDelivery(target('embedded.tollgate.invalid'), PAYLOAD, meta, false);
      expect(outcome, address).toMatchObject({ ok: false, retryable: false, status: null });
      expect(outcome.error, address).toContain(address);
    }
    expect(receiver.received).toHaveLength(before);
  });

  it('retries when the name does not resolve; sends other statuses and redirects to the dead letters', async () => {
    expect(await attemptDelivery(target('nowhere.tollgate.invalid'), PAYLOAD, meta, true)).toMatchObject({
      ok: false,
      retryable: true,
      status: null,
    });
    dns.answers.push([{ address: '127.0.0.1', family: 4 }], [{ address: '127.0.0.1', family: 4 }]);
    expect(await attemptDelivery(target('a.tollgate.invalid', '/gone'), PAYLOAD, meta, true)).toMatchObject({
      ok: false,
      retryable: false,
      status: 410,
    });
    const before = receiver.received.length;
    expect(await attemptDelivery(target('a.tollgate.invalid', '/moved'), PAYLOAD, meta, true)).toMatchObject({
      ok: false,
      retryable: false,
      status: 307,
    });
    expect(receiver.received).toHaveLength(before + 1);
  });
});
