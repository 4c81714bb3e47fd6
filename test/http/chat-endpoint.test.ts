/**
 * POST /v1/chat/completions is answered ahead of Fastify (src/http/chat-endpoint.ts). What Fastify gave that route
 * must hold there too: the same answer to every malformed body as a Fastify route with a JSON body, request ids,
 * CORS, the request metrics, and a 503 instead of new work once the server is closing.
 */
import { createServer, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GatewayDeps } from '../../src/gateway/index.js';
import { chatEndpoint } from '../../src/http/chat-endpoint.js';
import { Metrics } from '../../src/observability/index.js';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../support/gateway.js';

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: any;
}

const BODY_LIMIT = 2048;

/** Any bytes and headers (fetch would add a content-type of its own). */
function send(url: string, path: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}${path}`, { method: 'POST', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode!, headers: res.headers, body: text ? JSON.parse(text) : undefined });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('the chat endpoint ahead of Fastify', () => {
  let gw: TestGateway;
  let key: string;
  beforeAll(async () => {
    gw = await startGateway({
      overrides: { server: { body_limit_bytes: BODY_LIMIT, cors_origins: ['https://app.example.com'] } },
    });
    ({ key } = await gw.account());
  });
  afterAll(async () => gw?.close());

  it('answers every malformed body exactly as a Fastify route with a JSON body does', async () => {
    const auth = { authorization: `Bearer ${key}` };
    const json = { ...auth, 'content-type': 'application/json' };
    const cases: Array<[string, Record<string, string>, string | undefined]> = [
      ['no content-type', { ...auth, 'content-length': '2' }, '{}'],
      ['text/plain', { ...auth, 'content-type': 'text/plain' }, '{}'],
      ['application/jsonx', { ...auth, 'content-type': 'application/jsonx' }, '{}'],
      ['empty body', { ...json, 'content-length': '0' }, ''],
      ['broken JSON', json, '{"model": '],
      ['__proto__ key', json, '{"__proto__": {"admin": true}}'],
      ['constructor.prototype', json, '{"constructor": {"prototype": {"admin": true}}}'],
      ['nested too deep', json, `{"x":${'['.repeat(100)}${']'.repeat(100)}}`],
      ['over the limit (declared)', json, `{"x":"${'a'.repeat(BODY_LIMIT)}"}`],
      ['over the limit (chunked)', { ...json, 'transfer-encoding': 'chunked' }, `{"x":"${'a'.repeat(BODY_LIMIT)}"}`],
    ];
    for (const [name, headers, body] of cases) {
      const chat = await send(gw.url, '/v1/chat/completions', headers, body);
      const fastify = await send(gw.url, '/v1/webhooks', headers, body);
      expect(chat.status, name).toBeGreaterThanOrEqual(400);
      expect(chat.status, name).toBeLessThan(500);
      expect({ status: chat.status, error: chat.body.error }, name).toEqual({
        status: fastify.status,
        error: fastify.body.error,
      });
    }
    // Parameters after the media type are fine: the body is read, and an empty request names a missing field.
    const withCharset = await send(
      gw.url,
      '/v1/chat/completions',
      { ...auth, 'content-type': 'Application/JSON; charset=utf-8' },
      '{}',
    );
    expect(withCharset.status).toBe(400);
    expect(withCharset.body.error.message).toMatch(/^Missing required parameter/);
  });

  it('echoes a valid x-request-id, sends CORS headers to allowed origins, and counts the request in /metrics', async () => {
    const body = JSON.stringify({ model: 'sandbox/echo', messages: [{ role: 'user', content: 'hi' }] });
    const headers = {
      authorization: `Bearer ${key}`,
      'content-type': 'application/json',
      'x-request-id': 'trace-me-42',
      origin: 'https://app.example.com',
    };
    const answer = await send(gw.url, '/v1/chat/completions', headers, body);
    expect(answer.status).toBe(200);
    expect(answer.body.object).toBe('chat.completion');
    expect(answer.headers['x-request-id']).toBe('trace-me-42');
    expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(answer.headers['access-control-allow-origin']).toBe('https://app.example.com');
    expect(answer.headers['access-control-expose-headers']).toContain('x-ratelimit-remaining-requests');

    const other = await send(
      gw.url,
      '/v1/chat/completions',
      { ...headers, 'x-request-id': 'bad id with spaces', origin: 'https://evil.example.com' },
      body,
    );
    expect(other.headers['x-request-id']).toMatch(/^req_/);
    expect(other.headers['access-control-allow-origin']).toBeUndefined();

    const metrics = await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }).then(
      (r) => r.text(),
    );
    const counted = /tollgate_requests_total\{route="\/v1\/chat\/completions",status="200"\} (\d+)/.exec(metrics);
    expect(Number(counted?.[1])).toBeGreaterThanOrEqual(2);
  });

  it('answers 503 and closes the connection instead of starting work once the server is closing', async () => {
    const handle = chatEndpoint({
      // A closing server starts no work: anything read from these deps fails the test.
      deps: new Proxy(
        {},
        {
          get: (_, name) => {
            throw new Error(`deps.${String(name)} was read`);
          },
        },
      ) as GatewayDeps,
      metrics: new Metrics({ defaultMetrics: false }),
      bodyLimitBytes: BODY_LIMIT,
      corsOrigins: [],
      logger: pino({ level: 'silent' }),
    });
    const server = createServer((req, res) => handle(req, res, true));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const answer = await send(url, '/v1/chat/completions', { 'content-type': 'application/json' }, '{}');
      expect(answer.status).toBe(503);
      expect(answer.headers.connection).toBe('close');
      expect(answer.headers['x-request-id']).toMatch(/^req_/);
      expect(answer.body.error.code).toBe('service_unavailable');
    } finally {
      server.close();
    }
  });
});
