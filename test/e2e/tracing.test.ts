/**
 * OpenTelemetry: the built gateway (`node dist/main.js`) with OTEL_EXPORTER_OTLP_ENDPOINT set exports spans by
 * OTLP/HTTP to a local collector: the request (continuing the caller's `traceparent`), the upstream call, Redis
 * and the database commit; the upstream receives the trace and the request id. Without the variable, nothing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { tempDir } from '../support/databases.js';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.js';
import { freePort } from '../support/replicas.js';
import { needsRedis } from '../support/backends.js';
import { deleteRedisKeys, REDIS_TEST_URL } from '../support/redis.js';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Array<{ key: string; value: Record<string, unknown> }>;
}

const prefix = `tg-trace-${randomBytes(4).toString('hex')}:`;
const spans: OtlpSpan[] = [];
let collector: Server;
let collectorUrl: string;
let upstream: MockOpenAI;
const children: ChildProcess[] = [];
const dirs: string[] = [];

beforeAll(async () => {
  collector = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () => {
      if (req.url === '/v1/traces' && String(req.headers['content-type']).includes('json')) {
        const body = JSON.parse(Buffer.concat(parts).toString('utf8'));
        for (const resource of body.resourceSpans ?? [])
          for (const scope of resource.scopeSpans ?? []) spans.push(...scope.spans);
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
  collectorUrl = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
  upstream = await startMockOpenAI({ apiKey: 'sk-upstream' });
});

afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  await upstream.close();
  collector.close();
  await deleteRedisKeys(prefix);
});

async function startGateway(
  env: Record<string, string>,
): Promise<{ base: string; key: string; output: () => string; child: ChildProcess }> {
  const dataDir = tempDir();
  dirs.push(dataDir);
  const port = String(await freePort());
  const child = spawn(process.execPath, ['dist/main.js'], {
    env: {
      PATH: process.env.PATH ?? '',
      HOST: '127.0.0.1',
      PORT: port,
      TOLLGATE_DATA_DIR: dataDir,
      TOLLGATE_LOG_LEVEL: 'warn',
      OPENAI_API_KEY: 'sk-upstream',
      OPENAI_BASE_URL: upstream.url,
      REDIS_URL: REDIS_TEST_URL,
      TOLLGATE_REDIS_PREFIX: prefix,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let text = '';
  child.stdout.on('data', (d: Buffer) => (text += d.toString()));
  child.stderr.on('data', (d: Buffer) => (text += d.toString()));
  const until = Date.now() + 40_000;
  while (!/API key:\s+tg-live-/.test(text) || !/listening on/.test(text)) {
    if (Date.now() > until || child.exitCode !== null) throw new Error(`the gateway did not start:\n${text}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const key = /API key:\s+(tg-live-[0-9A-Za-z]{32})/.exec(text)![1]!;
  return { base: `http://127.0.0.1:${port}`, key, output: () => text, child };
}

const attribute = (span: OtlpSpan, key: string) => {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value ? Object.values(value)[0] : undefined;
};

needsRedis('OpenTelemetry traces (Redis)', { timeout: 90_000 }, () => {
  it("exports the request, upstream, Redis and database spans of one chat request in the caller's trace", async () => {
    const gateway = await startGateway({ OTEL_EXPORTER_OTLP_ENDPOINT: collectorUrl, OTEL_BSP_SCHEDULE_DELAY: '100' });
    expect(gateway.output()).toContain('traces: OTLP');
    const traceId = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    const response = await fetch(`${gateway.base}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${gateway.key}`,
        'content-type': 'application/json',
        traceparent: `00-${traceId}-${callerSpan}-01`,
      },
      body: JSON.stringify({ model: 'gpt-6.2-astra', messages: [{ role: 'user', content: 'trace me' }] }),
    });
    expect(response.status).toBe(200);
    const requestId = response.headers.get('x-request-id');

    // The upstream got the trace (a child of the gateway's span) and the request id.
    const upstreamRequest = upstream.requests.at(-1)!;
    expect(upstreamRequest.headers.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    expect(upstreamRequest.headers['x-client-request-id']).toBe(requestId);

    const until = Date.now() + 15_000;
    const inTrace = () => spans.filter((s) => s.traceId === traceId);
    while (!inTrace().some((s) => s.name === 'db commit') && Date.now() < until)
      await new Promise((r) => setTimeout(r, 100));
    const trace = inTrace();
    const server = trace.find((s) => s.name === 'POST /v1/chat/completions');
    expect(server, JSON.stringify(trace.map((s) => s.name))).toBeDefined();
    expect(server!.parentSpanId).toBe(callerSpan);
    expect(attribute(server!, 'tollgate.request_id')).toBe(requestId);
    expect(Number(attribute(server!, 'http.response.status_code'))).toBe(200);

    const upstreamSpan = trace.find((s) => s.name === 'upstream openai')!;
    expect(upstreamSpan.parentSpanId).toBe(server!.spanId);
    expect(upstreamRequest.headers.traceparent).toContain(upstreamSpan.spanId);
    expect(attribute(upstreamSpan, 'gen_ai.request.model')).toBeDefined();
    expect(trace.filter((s) => s.name.startsWith('redis ')).length).toBeGreaterThanOrEqual(2);
    expect(trace.some((s) => s.name === 'settle')).toBe(true);
    expect(trace.some((s) => s.name === 'db commit')).toBe(true);
    // Stopped before the next test counts spans: a span it exports while shutting down is not the next one's.
    const exited = new Promise((resolve) => gateway.child.once('exit', resolve));
    gateway.child.kill('SIGTERM');
    await exited;
  });

  it('loads nothing and exports nothing without OTEL_EXPORTER_OTLP_ENDPOINT', async () => {
    const before = spans.length;
    const gateway = await startGateway({});
    expect(gateway.output()).not.toContain('traces');
    const response = await fetch(`${gateway.base}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${gateway.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-6.2-astra', messages: [{ role: 'user', content: 'no trace' }] }),
    });
    expect(response.status).toBe(200);
    expect(upstream.requests.at(-1)!.headers.traceparent).toBeUndefined();
    expect(upstream.requests.at(-1)!.headers['x-client-request-id']).toBe(response.headers.get('x-request-id'));
    await new Promise((r) => setTimeout(r, 500));
    expect(spans.length).toBe(before);
    gateway.child.kill('SIGTERM');
  });
});
