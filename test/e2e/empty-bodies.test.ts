/**
 * `Content-Type: application/json` with an empty body (many HTTP clients send the header on every call) is no
 * body: a route that takes none answers as usual; a route that needs one still says the body must be an object.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../support/gateway.js';

let gw: TestGateway;

beforeAll(async () => {
  gw = await startGateway();
});
afterAll(async () => {
  await gw?.close();
});

async function send(method: string, path: string, token: string) {
  const response = await fetch(`${gw.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: '',
  });
  return { status: response.status, body: (await response.json()) as any };
}

describe('an empty JSON body', () => {
  it('DELETE /admin/keys/{id} revokes the key', async () => {
    const account = await gw.account();
    const { id } = await gw.key(account.id);
    const sent = await send('DELETE', `/admin/keys/${id}`, ADMIN_TOKEN);
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    expect(sent.body.id).toBe(id);
  });

  it('is accepted on other routes that take no body (their own answer, not a parse error)', async () => {
    const account = await gw.account();
    const created = await send('POST', `/admin/accounts/${account.id}/keys`, ADMIN_TOKEN);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const missing = await send('DELETE', '/v1/webhooks/wh_missing', account.key);
    expect(missing.status, JSON.stringify(missing.body)).toBe(404);
    const test = await send('POST', '/v1/webhooks/wh_missing/test', account.key);
    expect(test.status, JSON.stringify(test.body)).toBe(404);
  });

  it('a route that needs a body still answers 400', async () => {
    const sent = await send('POST', '/admin/accounts', ADMIN_TOKEN);
    expect(sent.status).toBe(400);
    expect(sent.body.error).toMatchObject({
      code: 'invalid_request',
      message: 'The request body must be a JSON object',
    });
    const webhook = await send('POST', '/v1/webhooks', (await gw.account()).key);
    expect(webhook.status).toBe(400);
    expect(webhook.body.error.code).toBe('invalid_request');
  });
});
