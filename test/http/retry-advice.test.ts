/**
 * `x-should-retry` on every error the gateway writes, whichever server part writes it (the chat endpoint ahead of
 * Fastify, Fastify's routes and its own 404/400/413, the Anthropic-shaped routes, the admin and dashboard APIs, the
 * socket-level answers): false where the same request cannot succeed, true with `Retry-After` where a retry may.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DashboardClient } from '../dashboard/client.js';
import { startGateway, ADMIN_TOKEN, type TestGateway } from '../support/gateway.js';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.js';

const BODY_LIMIT = 64 * 1024;

let gateway: TestGateway;
let upstream: MockOpenAI;
let account: { id: string; key: string };

beforeAll(async () => {
  upstream = await startMockOpenAI({ apiKey: 'sk-retry' });
  gateway = await startGateway({
    env: { OPENAI_API_KEY: 'sk-retry', OPENAI_BASE_URL: upstream.url },
    overrides: {
      server: { body_limit_bytes: BODY_LIMIT },
      routing: { retries: 0 },
      signup: { per_ip_per_hour: 1 },
    },
  });
  account = await gateway.account();
});
afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
});

interface Sent {
  status: number;
  code: string | undefined;
  shouldRetry: string | null;
  retryAfter: string | null;
}

async function send(
  method: string,
  path: string,
  options: { key?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
): Promise<Sent> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`;
  if (options.body !== undefined || options.raw !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${gateway.url}${path}`, {
    method,
    headers,
    ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
    ...(options.raw !== undefined ? { body: options.raw } : {}),
  });
  const body = (await response.json()) as { error?: { code?: string; type: string } };
  return {
    status: response.status,
    code: body.error?.code ?? body.error?.type,
    shouldRetry: response.headers.get('x-should-retry'),
    retryAfter: response.headers.get('retry-after'),
  };
}

const chatBody = (model = 'sandbox/echo') => ({ model, messages: [{ role: 'user', content: 'hi' }] });
const messagesBody = (model = 'sandbox/echo') => ({ ...chatBody(model), max_tokens: 20 });

function expectDoNotRetry(sent: Sent, status: number): void {
  expect({ status: sent.status, shouldRetry: sent.shouldRetry }).toEqual({ status, shouldRetry: 'false' });
}

function expectRetry(sent: Sent, status: number): void {
  expect({ status: sent.status, shouldRetry: sent.shouldRetry }).toEqual({ status, shouldRetry: 'true' });
  expect(Number(sent.retryAfter)).toBeGreaterThanOrEqual(1);
}

describe('x-should-retry: false where the same request cannot succeed', () => {
  it('on the chat endpoint: 400, 401, 402, 403, 404, 413', async () => {
    const path = '/v1/chat/completions';
    const broke = await gateway.account();
    await gateway.setBalance(broke.id, 0);
    const readOnly = await gateway.key(account.id, { permissions: 'read_only' });
    expectDoNotRetry(await send('POST', path, { key: account.key, raw: '{' }), 400);
    expectDoNotRetry(await send('POST', path, { key: account.key, body: { model: 'sandbox/echo' } }), 400);
    expectDoNotRetry(await send('POST', path, { body: chatBody() }), 401);
    expectDoNotRetry(await send('POST', path, { key: `tg-live-${'x'.repeat(32)}`, body: chatBody() }), 401);
    expectDoNotRetry(await send('POST', path, { key: broke.key, body: chatBody() }), 402);
    expectDoNotRetry(await send('POST', path, { key: readOnly.key, body: chatBody() }), 403);
    expectDoNotRetry(await send('POST', path, { key: account.key, body: chatBody('no/such-model') }), 404);
    expectDoNotRetry(await send('POST', path, { key: account.key, raw: 'x'.repeat(BODY_LIMIT + 1) }), 413);
  });

  it("on Fastify's routes and its own answers: unknown route, bad JSON, too large, bad query, bad key", async () => {
    expectDoNotRetry(await send('GET', '/v1/nowhere', { key: account.key }), 404);
    expectDoNotRetry(await send('POST', '/v1/embeddings', { key: account.key, raw: '{"model":' }), 400);
    const large = { key: account.key, raw: JSON.stringify({ input: 'x'.repeat(BODY_LIMIT) }) };
    expectDoNotRetry(await send('POST', '/v1/embeddings', large), 413);
    expectDoNotRetry(await send('GET', '/v1/models?active_only=maybe', { key: account.key }), 400);
    expectDoNotRetry(await send('GET', '/v1/credits', { key: 'tg-live-short' }), 401);
    expectDoNotRetry(await send('GET', '/v1/models/no-such-model', { key: account.key }), 404);
  });

  it('on the Anthropic-shaped routes', async () => {
    const anthropic = { 'anthropic-version': '2023-06-01' };
    expectDoNotRetry(await send('POST', '/v1/messages', { headers: anthropic, body: messagesBody() }), 401);
    const unknown = { headers: { ...anthropic, 'x-api-key': account.key }, body: messagesBody('no/such-model') };
    expectDoNotRetry(await send('POST', '/v1/messages', unknown), 404);
    expectDoNotRetry(await send('GET', '/v1/models', { headers: anthropic }), 401);
  });

  it('on the admin and dashboard APIs', async () => {
    expectDoNotRetry(await send('GET', '/admin/accounts', { key: 'not-the-admin-token' }), 401);
    expectDoNotRetry(await send('GET', '/admin/accounts/acct_nobody', { key: ADMIN_TOKEN }), 404);
    expectDoNotRetry(await send('POST', '/admin/accounts', { key: ADMIN_TOKEN, body: { emial: 'x' } }), 400);
    expectDoNotRetry(await send('GET', '/dashboard/api/keys'), 401);
  });

  it('on a daily limit (the wait is until midnight UTC)', async () => {
    const limited = await gateway.account();
    expect((await gateway.admin('PATCH', `/admin/accounts/${limited.id}`, { daily_limit: 0 })).status).toBe(200);
    const sent = await send('POST', '/v1/chat/completions', { key: limited.key, body: chatBody() });
    expect(sent.code).toBe('daily_limit_exceeded');
    expectDoNotRetry(sent, 429);
  });

  it('on a 429 whose wait is an hour (sign-ups from one address)', async () => {
    const browser = new DashboardClient(gateway.url);
    expect((await browser.signUp('first@example.com')).status).toBeLessThan(300);
    const refused = await browser.signUp('second@example.com');
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(120);
    expect(refused.headers.get('x-should-retry')).toBe('false');
  });

  it('on headers too large, answered on the socket before there is a request', async () => {
    const answer = await rawExchange(
      `GET /v1/models HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      new URL(gateway.url),
    );
    expect(answer).toMatch(/^HTTP\/1\.1 431 /);
    expect(answer.toLowerCase()).toContain('x-should-retry: false\r\n');
  });
});

describe('x-should-retry: true with Retry-After where a retry may succeed', () => {
  it('a per-minute rate limit', async () => {
    const limited = await gateway.account();
    await gateway.admin('PATCH', `/admin/accounts/${limited.id}`, { requests_per_minute: 1 });
    expect((await send('GET', '/v1/credits', { key: limited.key })).status).toBe(200);
    const sent = await send('POST', '/v1/chat/completions', { key: limited.key, body: chatBody() });
    expect(sent.code).toBe('rate_limit_exceeded');
    expectRetry(sent, 429);
  });

  it('a model nobody can serve now (503) and a failed upstream (502)', async () => {
    const keyless = await startGateway();
    try {
      const { key } = await keyless.account();
      const response = await fetch(`${keyless.baseURL}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(chatBody('gpt-6-luna')),
      });
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('model_unavailable');
      expect(response.status).toBe(503);
      expect(response.headers.get('x-should-retry')).toBe('true');
      expect(response.headers.get('retry-after')).toBe('1');
    } finally {
      await keyless.close();
    }
    upstream.enqueue({ kind: 'error', status: 500, message: 'boom' });
    const failed = await send('POST', '/v1/chat/completions', { key: account.key, body: chatBody('gpt-6-luna') });
    expect(failed.code).toBe('upstream_error');
    expectRetry(failed, 502);
  });
});

/** Writes `request` on a fresh connection and returns all the server wrote before it closed. */
function rawExchange(request: string, url: URL): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname, () => socket.write(request));
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('close', () => resolve(answer));
    socket.on('error', reject);
  });
}
