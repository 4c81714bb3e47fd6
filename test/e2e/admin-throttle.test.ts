/** Failed admin authentication is throttled per client address (429 with Retry-After), and logged without the token. */
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { fromAddress } from '../dashboard/client.js';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../support/gateway.js';
import { apiCall } from '../support/admin-call.js';

const lines: string[] = [];
let gateway: TestGateway;
beforeAll(async () => {
  const sink = new Writable({ write: (chunk, _encoding, done) => (lines.push(String(chunk)), done()) });
  gateway = await startGateway({ logger: pino({ level: 'info' }, sink) });
});
afterAll(() => gateway?.close());

const call = (path: string, token: string, send: typeof fetch = fetch) =>
  apiCall(gateway.url, token, 'GET', path, undefined, send);

test('after 10 wrong admin tokens an address gets 429, even with the right token; another address is not affected', async () => {
  for (let i = 0; i < 10; i++) {
    const wrong = await call('/admin/accounts', `guess-${i}-0123456789abcdef`);
    expect([wrong.status, wrong.body.error.code]).toEqual([401, 'invalid_api_key']);
  }
  for (const path of ['/admin/accounts', '/metrics']) {
    const throttled = await call(path, `guess-x-0123456789abcdef`);
    expect([throttled.status, throttled.body.error.type, throttled.body.error.code], path).toEqual([
      429,
      'rate_limit_error',
      'rate_limit_exceeded',
    ]);
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(throttled.body.error.retry_after).toBe(Number(throttled.headers.get('retry-after')));
  }
  expect((await call('/admin/accounts', ADMIN_TOKEN)).status).toBe(429);
  expect((await call('/admin/accounts', ADMIN_TOKEN, fromAddress('127.0.0.2'))).status).toBe(200);
  expect((await call('/metrics', ADMIN_TOKEN, fromAddress('127.0.0.2'))).status).toBe(200);

  const logged = lines.filter((line) => /admin authentication/.test(line));
  expect(logged.length).toBeGreaterThanOrEqual(11);
  expect(logged.some((line) => line.includes('127.0.0.1'))).toBe(true);
  expect(logged.join('\n')).not.toContain('guess-');
  expect(logged.join('\n')).not.toContain(ADMIN_TOKEN);
});
