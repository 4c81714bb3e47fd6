/**
 * Bad input: 10,000+ generated malformed requests (test/reliability/fuzz-inputs.ts) against a real gateway
 * process (`node dist/main.js`), over raw sockets so any byte can be sent. Every answer must be a 4xx with the
 * contract's error envelope, never a 5xx or silence; slow bodies get 408; memory returns to its baseline.
 */
import { connect } from 'node:net';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { WebSocket } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startChildGateway, type ChildGateway } from '../support/child-gateway.js';
import { tempDir } from '../support/databases.js';
import { generator, type RawRequest } from './fuzz-inputs.js';

const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 10_000);
const SEED = Number(process.env.FUZZ_SEED ?? 8_2026);
const CONCURRENCY = 64;
const BODY_LIMIT = 256 * 1024;
const REQUEST_TIMEOUT_MS = 1_500;
let resets = 0;
const RESET_413 = JSON.stringify({
  error: { message: 'reset while sending', type: 'invalid_request_error', code: 'request_too_large', param: null },
});
/** An answer later than this is a hang. */
const ANSWER_WITHIN_MS = REQUEST_TIMEOUT_MS + 5_000;

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
  ms: number;
}

/** One request on its own connection; resolves with whatever the server sent before closing, or rejects on silence. */
function send(port: number, request: RawRequest): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within ${ANSWER_WITHIN_MS} ms to ${request.kind} ${request.method} ${request.path}`));
    }, ANSWER_WITHIN_MS);
    const finish = () => {
      clearTimeout(timer);
      const raw = Buffer.concat(chunks);
      const split = raw.indexOf('\r\n\r\n');
      if (split < 0) {
        // The gateway answers 413 as soon as the limit is passed and closes; a client still sending can see the
        // reset before the answer (TCP drops unread data on RST). Only bodies over the limit may end this way.
        if ((request.body?.length ?? 0) > BODY_LIMIT)
          return (resets++, resolve({ status: 413, headers: {}, body: RESET_413, ms: performance.now() - started }));
        return reject(new Error(`no HTTP answer to ${request.kind} (${raw.length} bytes)`));
      }
      const [statusLine, ...lines] = raw.subarray(0, split).toString('latin1').split('\r\n');
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
      }
      let body: Buffer = raw.subarray(split + 4);
      if (headers['transfer-encoding'] === 'chunked') body = dechunk(body);
      resolve({
        status: Number(statusLine!.split(' ')[1]),
        headers,
        body: body.toString('utf8'),
        ms: performance.now() - started,
      });
    };
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('end', finish);
    socket.on('error', () => (chunks.length ? finish() : undefined));
    socket.on('close', () => (chunks.length ? undefined : finish()));
    const body = request.body ?? Buffer.alloc(0);
    const length = request.declaredLength ?? body.length;
    const head =
      `${request.method} ${request.path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n` +
      request.headers.map(([name, value]) => `${name}: ${value}\r\n`).join('') +
      (request.body || request.declaredLength ? `Content-Length: ${length}\r\n` : '') +
      '\r\n';
    socket.write(Buffer.from(head, 'utf8'));
    if (!request.stall) socket.write(body);
    else body.forEach((byte, i) => setTimeout(() => socket.writable && socket.write(Buffer.from([byte])), i * 20));
  });
}

function dechunk(data: Buffer): Buffer {
  const out: Buffer[] = [];
  let at = 0;
  while (at < data.length) {
    const eol = data.indexOf('\r\n', at);
    const size = parseInt(data.subarray(at, eol).toString(), 16);
    if (!size) break;
    out.push(data.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
  return Buffer.concat(out);
}

function problem(request: RawRequest, answer: Answer): string | undefined {
  const where = `${request.kind} ${request.method} ${request.path.slice(0, 60)} -> ${answer.status}`;
  if (answer.status < 400 || answer.status > 499)
    return `${where}: ${request.body?.subarray(0, 200).toString('utf8')} => ${answer.body.slice(0, 200)}`;
  let envelope: any;
  try {
    envelope = JSON.parse(answer.body);
  } catch {
    return `${where}: body is not JSON: ${answer.body.slice(0, 200)}`;
  }
  const error = envelope?.error;
  const shaped =
    error &&
    typeof error.message === 'string' &&
    typeof error.type === 'string' &&
    typeof error.code === 'string' &&
    'param' in error &&
    (error.param === null || typeof error.param === 'string');
  return shaped ? undefined : `${where}: not the error envelope: ${answer.body.slice(0, 200)}`;
}

/** A full garbage collection in the gateway process, through its inspector (it runs with --inspect on loopback). */
async function collectGarbage(gateway: ChildGateway): Promise<void> {
  const url = /ws:\/\/127\.0\.0\.1:\d+\/[\w-]+/.exec(gateway.output())![0];
  const socket = new WebSocket(url);
  await new Promise((resolve, reject) => {
    socket.onopen = () => socket.send(JSON.stringify({ id: 1, method: 'HeapProfiler.collectGarbage' }));
    socket.onmessage = (event) => JSON.parse(String(event.data)).id === 1 && resolve(undefined);
    socket.onerror = reject;
  });
  socket.close();
}

async function memory(gateway: ChildGateway): Promise<{ rss: number; heap: number }> {
  // After a full collection, the lowest of a few samples: what is held, not what waits for collection.
  let rss = Infinity;
  let heap = Infinity;
  for (let i = 0; i < 3; i++) {
    await collectGarbage(gateway);
    const metrics = String((await gateway.admin('GET', '/metrics')).body);
    heap = Math.min(heap, Number(/^nodejs_heap_size_used_bytes (\d+)/m.exec(metrics)![1]));
    rss = Math.min(rss, gateway.rss());
    await new Promise((r) => setTimeout(r, 250));
  }
  return { rss, heap };
}

describe('bad input: generated malformed requests against a gateway process', () => {
  let gateway: ChildGateway;
  let keys: { live: string; revoked: string; readOnly: string };
  let dataDir: string;

  beforeAll(async () => {
    dataDir = tempDir('tollgate-fuzz-');
    const config = join(dataDir, 'tollgate.config.yaml');
    // The generated requests include wrong credentials on /admin and /metrics from this one address; the test's
    // own admin calls must not be throttled by them (test/e2e/admin-throttle.test.ts covers the throttle).
    writeFileSync(
      config,
      `server:\n  body_limit_bytes: ${BODY_LIMIT}\n  request_timeout_ms: ${REQUEST_TIMEOUT_MS}\n  admin_auth_max_failures: 100000\n`,
    );
    gateway = await startChildGateway({
      dataDir,
      adminToken: 'fuzz-admin-token-0123456789',
      env: { TOLLGATE_CONFIG: config, TOLLGATE_LOG_LEVEL: 'error', NODE_OPTIONS: '--inspect=127.0.0.1:0' },
    });
    const account = await gateway.admin('POST', '/admin/accounts', { email: 'fuzz@example.com', plan: 'enterprise' });
    await gateway.admin('PATCH', `/admin/accounts/${account.body.id}`, {
      requests_per_minute: 10_000_000,
      tokens_per_minute: 1_000_000_000,
    });
    const revoked = await gateway.admin('POST', `/admin/accounts/${account.body.id}/keys`, {});
    await gateway.admin('DELETE', `/admin/keys/${revoked.body.id}`);
    const readOnly = await gateway.admin('POST', `/admin/accounts/${account.body.id}/keys`, {
      permissions: 'read_only',
    });
    keys = { live: account.body.api_key, revoked: revoked.body.key, readOnly: readOnly.body.key };
  }, 60_000);
  afterAll(async () => {
    await gateway?.kill('SIGTERM');
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it(`answers ${REQUESTS} malformed requests with 4xx envelopes, times out slow bodies, and gives its memory back`, async () => {
    const started = performance.now();
    const port = Number(new URL(gateway.url).port);
    const make = generator(SEED, keys, BODY_LIMIT);
    const requests: RawRequest[] = [];
    for (let i = 0; i < REQUESTS - 60; i++) requests.push(make.next());
    for (let i = 0; i < 40; i++) requests.push(make.oversized());
    for (let i = 0; i < 20; i++) requests.push(make.slow());

    const problems: string[] = [];
    const byKind = new Map<string, Map<number, number>>();
    let slowest = 0;
    const run = async (batch: RawRequest[]) => {
      let next = 0;
      const worker = async () => {
        while (next < batch.length) {
          const request = batch[next++]!;
          let answer: Answer;
          try {
            answer = await send(port, request);
          } catch (error) {
            problems.push((error as Error).message);
            continue;
          }
          if (request.kind !== 'slow-body') slowest = Math.max(slowest, answer.ms);
          const found = problem(request, answer);
          if (found) problems.push(found);
          if (request.kind === 'slow-body' && answer.status !== 408)
            problems.push(`slow body answered ${answer.status}`);
          const statuses = byKind.get(request.kind) ?? new Map<number, number>();
          statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
          byKind.set(request.kind, statuses);
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    };

    // Warm-up (JIT, pools, caches), then the baseline, then everything else; then memory again.
    await run(requests.splice(0, 1_000));
    const before = await memory(gateway);
    const slow = requests.filter((r) => r.kind === 'slow-body');
    await Promise.all([run(requests.filter((r) => r.kind !== 'slow-body')), run(slow)]);
    await new Promise((r) => setTimeout(r, 1_000));
    const after = await memory(gateway);

    const summary = Object.fromEntries([...byKind].map(([kind, statuses]) => [kind, Object.fromEntries(statuses)]));
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    console.info(
      `fuzz: ${REQUESTS} requests (seed ${SEED}) in ${seconds} s, slowest non-slow answer ${Math.round(slowest)} ms, ${resets} resets while sending an oversized body`,
      summary,
    );
    console.info(
      `fuzz memory: rss ${(before.rss / 2 ** 20).toFixed(1)} -> ${(after.rss / 2 ** 20).toFixed(1)} MiB, heap ${(before.heap / 2 ** 20).toFixed(1)} -> ${(after.heap / 2 ** 20).toFixed(1)} MiB`,
    );
    expect(problems.slice(0, 20), `${problems.length} problems`).toEqual([]);
    expect([...byKind.values()].reduce((n, s) => n + [...s.values()].reduce((a, b) => a + b, 0), 0)).toBe(REQUESTS);
    // Back to baseline after a full collection: the heap within 5 MiB, the resident set within 32 MiB.
    expect(after.heap).toBeLessThan(before.heap + 5 * 2 ** 20);
    expect(after.rss).toBeLessThan(before.rss + 32 * 2 ** 20);
    // Still serving.
    expect((await fetch(`${gateway.url}/health`)).status).toBe(200);
  }, 90_000);
});
