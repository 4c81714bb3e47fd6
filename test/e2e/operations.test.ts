/** What an operator relies on: access logs with ids and cost but never a key, and CORS off unless configured. */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type TestGateway } from '../support/gateway.js';

describe('logs', () => {
  const lines: string[] = [];
  let gateway: TestGateway;
  beforeAll(async () => {
    const sink = new Writable({ write: (chunk, _encoding, done) => (lines.push(String(chunk)), done()) });
    gateway = await startGateway({ logger: pino({ level: 'debug' }, sink) });
  });
  afterAll(async () => gateway?.close());

  it('log every chat request with request, account and key ids, model, provider, status and cost, and no key', async () => {
    const account = await gateway.account();
    const client = gateway.client(account.key);
    await client.chat.completions.create({ model: 'sandbox/echo', messages: [{ role: 'user', content: 'log me' }] });
    const stream = await client.chat.completions.create({
      model: 'sandbox/echo',
      stream: true,
      messages: [{ role: 'user', content: 'and me' }],
    });
    for await (const _ of stream) void _;
    await gateway
      .client(account.key.slice(0, -1) + 'X')
      .models.list()
      .catch(() => undefined);
    await fetch(`${gateway.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: account.key },
      body: '{',
    });

    const access = lines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'chat completion');
    expect(access).toHaveLength(2);
    for (const entry of access) {
      expect(entry).toMatchObject({ account_id: account.id, model: 'sandbox/echo', provider: 'sandbox', status: 200 });
      expect(entry.key_id).toMatch(/^key_/);
      expect(entry.reqId).toMatch(/^req_/);
      expect(entry.cost).toBeGreaterThan(0);
    }
    const all = lines.join('');
    expect(all).not.toMatch(/tg-(live|test)-[0-9A-Za-z]{32}/);
    expect(all).not.toContain(account.key.slice(8, 40));
  });
});

describe('CORS', () => {
  it('is off for /v1 by default and answers only the origins the operator allows', async () => {
    const closed = await startGateway();
    const open = await startGateway({ overrides: { server: { cors_origins: ['https://app.example.com'] } } });
    try {
      const ask = (g: TestGateway, origin: string) =>
        fetch(`${g.baseURL}/models`, {
          method: 'OPTIONS',
          headers: { origin, 'access-control-request-method': 'GET' },
        });
      expect((await ask(closed, 'https://app.example.com')).headers.get('access-control-allow-origin')).toBeNull();
      const allowed = await ask(open, 'https://app.example.com');
      expect(allowed.status).toBe(204);
      expect(allowed.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
      expect((await ask(open, 'https://evil.example.com')).headers.get('access-control-allow-origin')).toBeNull();
    } finally {
      await closed.close();
      await open.close();
    }
  });
});
