/**
 * Every refused request leaves one log line at the default level (info) with its request id, the key's and
 * account's ids when the key is known (never the key), status, error code and message: an operator can answer
 * "why was I refused?".
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type TestGateway } from '../support/gateway.js';

const lines: string[] = [];
let gateway: TestGateway;
let account: { id: string; key: string };

beforeAll(async () => {
  const sink = new Writable({ write: (chunk, _encoding, done) => (lines.push(String(chunk)), done()) });
  gateway = await startGateway({ logger: pino({ level: 'info' }, sink) });
  account = await gateway.account();
});
afterAll(async () => gateway?.close());

let counter = 0;

/** Sends a request with a request id of its own; returns that id and the answer's status. */
async function send(
  method: string,
  path: string,
  options: { key?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
): Promise<{ requestId: string; status: number }> {
  const requestId = `refusal-${++counter}-${Date.now()}`;
  const headers: Record<string, string> = { 'x-request-id': requestId, ...options.headers };
  if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
  if (options.body !== undefined || options.raw !== undefined) headers['content-type'] = 'application/json';
  const body = options.raw ?? (options.body === undefined ? undefined : JSON.stringify(options.body));
  const response = await fetch(`${gateway.url}${path}`, { method, headers, ...(body ? { body } : {}) });
  await response.arrayBuffer();
  return { requestId, status: response.status };
}

/** The refusal lines of one request (waiting for the logger to write them). */
async function refusalsOf(requestId: string): Promise<Array<Record<string, unknown>>> {
  await new Promise((resolve) => setTimeout(resolve, 30));
  return lines
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.reqId === requestId && line.msg === 'request refused');
}

async function expectRefusal(
  sent: { requestId: string; status: number },
  expected: { status: number; code: string; key?: { id: string; accountId: string } },
): Promise<Record<string, unknown>> {
  expect(sent.status).toBe(expected.status);
  const logged = await refusalsOf(sent.requestId);
  expect(logged).toHaveLength(1);
  const line = logged[0]!;
  expect(line).toMatchObject({ level: 30, status: expected.status, code: expected.code });
  expect(typeof line.message).toBe('string');
  expect((line.message as string).length).toBeGreaterThan(0);
  if (expected.key) expect(line).toMatchObject({ key_id: expected.key.id, account_id: expected.key.accountId });
  else expect(line).not.toHaveProperty('key_id');
  return line;
}

const chat = (model = 'sandbox/echo') => ({ model, messages: [{ role: 'user', content: 'hi' }] });

describe('a refused request leaves one info line', () => {
  it('401: no key, an unknown key, a revoked key (named by its id)', async () => {
    await expectRefusal(await send('POST', '/v1/chat/completions', { body: chat() }), {
      status: 401,
      code: 'missing_api_key',
    });
    const unknown = `tg-live-${'Q'.repeat(32)}`;
    await expectRefusal(await send('POST', '/v1/chat/completions', { key: unknown, body: chat() }), {
      status: 401,
      code: 'invalid_api_key',
    });
    const revoked = await gateway.key(account.id);
    expect((await gateway.admin('DELETE', `/admin/keys/${revoked.id}`)).status).toBe(200);
    const line = await expectRefusal(await send('GET', '/v1/models', { key: revoked.key }), {
      status: 401,
      code: 'invalid_api_key',
      key: { id: revoked.id, accountId: account.id },
    });
    expect(line).toMatchObject({ method: 'GET', path: '/v1/models' });
  });

  it('402: no credit, with the key and account ids', async () => {
    const broke = await gateway.account();
    await gateway.setBalance(broke.id, 0);
    const key = await gateway.key(broke.id);
    await expectRefusal(await send('POST', '/v1/chat/completions', { key: key.key, body: chat() }), {
      status: 402,
      code: 'insufficient_credits',
      key: { id: key.id, accountId: broke.id },
    });
  });

  it('403 and 404 (model and route), on the chat endpoint and the Anthropic-shaped one', async () => {
    const readOnly = await gateway.key(account.id, { permissions: 'read_only' });
    await expectRefusal(await send('POST', '/v1/chat/completions', { key: readOnly.key, body: chat() }), {
      status: 403,
      code: 'permission_denied',
      key: { id: readOnly.id, accountId: account.id },
    });
    const user = await gateway.key(account.id);
    const anthropic = { 'x-api-key': user.key, 'anthropic-version': '2023-06-01' };
    const line = await expectRefusal(
      await send('POST', '/v1/messages', { headers: anthropic, body: { ...chat('no/such-model'), max_tokens: 9 } }),
      { status: 404, code: 'model_not_found', key: { id: user.id, accountId: account.id } },
    );
    expect(line.message).toContain('no/such-model');
    await expectRefusal(await send('GET', '/v1/nowhere?x=1', { key: user.key }), {
      status: 404,
      code: 'not_found',
      key: { id: user.id, accountId: account.id },
    });
  });

  it("400 from the body readers (the chat endpoint's and Fastify's); 431 on the socket, before any request id", async () => {
    await expectRefusal(await send('POST', '/v1/chat/completions', { key: account.key, raw: '{' }), {
      status: 400,
      code: 'invalid_request',
    });
    await expectRefusal(await send('POST', '/v1/embeddings', { key: account.key, raw: '{' }), {
      status: 400,
      code: 'invalid_request',
    });
    const response = await fetch(`${gateway.baseURL}/models`, { headers: { 'x-big': 'a'.repeat(20_000) } }).catch(
      (e: unknown) => e,
    );
    expect((response as Response).status).toBe(431);
    await new Promise((resolve) => setTimeout(resolve, 30));
    const socketLines = lines.map((line) => JSON.parse(line)).filter((line) => line.code === 'headers_too_large');
    expect(socketLines).toMatchObject([{ level: 30, msg: 'request refused', status: 431 }]);
  });

  it('429: a rate limit, with the key and account ids', async () => {
    const limited = await gateway.account();
    await gateway.admin('PATCH', `/admin/accounts/${limited.id}`, { requests_per_minute: 1 });
    const key = await gateway.key(limited.id);
    expect((await send('POST', '/v1/chat/completions', { key: key.key, body: chat() })).status).toBe(200);
    await expectRefusal(await send('POST', '/v1/chat/completions', { key: key.key, body: chat() }), {
      status: 429,
      code: 'rate_limit_exceeded',
      key: { id: key.id, accountId: limited.id },
    });
  });

  it('admin API: a wrong token is refused with a line, and no line holds a key', async () => {
    await expectRefusal(await send('GET', '/admin/accounts', { key: 'wrong-admin-token' }), {
      status: 401,
      code: 'invalid_api_key',
    });
    const all = lines.join('');
    expect(all).not.toMatch(/tg-(live|test)-[0-9A-Za-z]{32}/);
    expect(all).not.toContain(account.key.slice(8));
  });
});
