/**
 * Every upstream fault, streaming and not, table-driven: a local fault-injecting upstream (test/support/mock-openai.ts)
 * behind a real gateway with short timeouts. For each the client gets the contract's error (status and envelope),
 * or after the first byte one `data: {"error":...}` event and no [DONE]; only delivered tokens are charged; no
 * reservation stays open; the ledger sums to the balance.
 */
import { createServer, type AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { APIError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultConfig, type Config } from '../../src/config/index.js';
import { countPromptTokens, countTextTokens } from '../../src/tokens/index.js';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../support/gateway.js';
import { startMockOpenAI, type Behavior, type MockOpenAI } from '../support/mock-openai.js';

const MODEL = 'gpt-6-luna';
const PRICE = { prompt: 100_000n, completion: 500_000n }; // nano-USD per 1k tokens (0.0001 / 0.0005 USD)
const MB = 1024 * 1024;
const RETRIES = 1;

let mock: MockOpenAI;
let gw: TestGateway;
let refused: TestGateway;

const overrides = (): Partial<Config> => ({
  server: { ...defaultConfig().server, port: 0, host: '127.0.0.1', upstream_timeout_ms: 300 },
  routing: {
    retries: RETRIES,
    backoff_ms: 5,
    max_backoff_ms: 20,
    breaker_failures: 1_000_000,
    breaker_cooldown_ms: 1_000,
  },
});

beforeAll(async () => {
  mock = await startMockOpenAI({ apiKey: 'sk-faults' });
  gw = await startGateway({ env: { OPENAI_API_KEY: 'sk-faults', OPENAI_BASE_URL: mock.url }, overrides: overrides() });
  const closedPort = await new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
  refused = await startGateway({
    env: { OPENAI_API_KEY: 'sk-faults', OPENAI_BASE_URL: `http://127.0.0.1:${closedPort}/v1` },
    overrides: overrides(),
  });
});

afterAll(async () => {
  await gw?.close();
  await refused?.close();
  await mock?.close();
});

interface Row {
  name: string;
  /** Undefined: the upstream's port is closed. */
  behavior?: Behavior;
  stream: boolean;
  /** An HTTP error before any byte: status and code. */
  status?: number;
  code: string;
  /** After the first byte: the text delivered before the error event. */
  delivered?: string;
}

const part = (n: number) => Array.from({ length: n }, (_, i) => `part${i} `).join('');
const both = (name: string, behavior: Behavior | undefined, status: number, code: string): Row[] =>
  [false, true].map((stream) => ({ name, ...(behavior ? { behavior } : {}), stream, status, code }));

const ROWS: Row[] = [
  ...both('connection refused', undefined, 502, 'upstream_error'),
  {
    name: 'reset mid-body',
    behavior: { kind: 'reset', bytes: 120 },
    stream: false,
    status: 502,
    code: 'upstream_error',
  },
  {
    name: 'reset mid-stream',
    behavior: { kind: 'cut', afterChunks: 3 },
    stream: true,
    code: 'upstream_error',
    delivered: part(3),
  },
  ...both('timeout before the headers', { kind: 'hang' }, 504, 'upstream_timeout'),
  { name: 'timeout mid-body', behavior: { kind: 'stall' }, stream: false, status: 504, code: 'upstream_timeout' },
  {
    name: 'timeout mid-stream',
    behavior: { kind: 'stall', afterChunks: 2 },
    stream: true,
    code: 'upstream_timeout',
    delivered: part(2),
  },
  ...[500, 502, 503, 429].flatMap((status) => [
    ...both(`HTTP ${status}`, { kind: 'error', status }, 502, 'upstream_error'),
    ...both(`HTTP ${status} with Retry-After`, { kind: 'error', status, retryAfter: 1 }, 502, 'upstream_error'),
  ]),
  {
    name: 'invalid JSON',
    behavior: { kind: 'raw', body: '{"choices": [oops' },
    stream: false,
    status: 502,
    code: 'upstream_error',
  },
  {
    name: 'JSON that is not a completion',
    behavior: { kind: 'raw', body: '{"object": "list"}' },
    stream: false,
    status: 502,
    code: 'upstream_error',
  },
  {
    name: 'invalid JSON as the first event',
    behavior: { kind: 'raw', headers: { 'content-type': 'text/event-stream' }, body: 'data: {oops\n\n' },
    stream: true,
    status: 502,
    code: 'upstream_error',
  },
  {
    name: 'invalid JSON mid-stream',
    behavior: { kind: 'malformed', afterChunks: 2 },
    stream: true,
    code: 'upstream_error',
    delivered: part(2),
  },
  {
    name: 'truncated body',
    behavior: { kind: 'raw', body: '{"id": "chatcmpl-1", "choices": [{"index": 0,' },
    stream: false,
    status: 502,
    code: 'upstream_error',
  },
  {
    name: 'truncated SSE (no finish, no [DONE])',
    behavior: { kind: 'truncated', afterChunks: 2 },
    stream: true,
    code: 'upstream_error',
    delivered: part(2),
  },
  {
    name: 'enormous body (50 MB)',
    behavior: { kind: 'huge', bytes: 50 * MB },
    stream: false,
    status: 502,
    code: 'upstream_error',
  },
  {
    name: 'enormous body without a length (50 MB, chunked)',
    behavior: { kind: 'huge', bytes: 50 * MB, chunked: true },
    stream: false,
    status: 502,
    code: 'upstream_error',
  },
  {
    name: 'enormous single event (50 MB)',
    behavior: { kind: 'huge', bytes: 50 * MB, chunkBytes: 50 * MB },
    stream: true,
    code: 'upstream_error',
    delivered: '',
  },
  // 16 MiB of text is delivered, then the answer is cut: the delivered part is what is charged.
  {
    name: 'enormous stream (50 MB)',
    behavior: { kind: 'huge', bytes: 50 * MB },
    stream: true,
    code: 'upstream_error',
    delivered: 'huge',
  },
];

const nano = (usd: number) => BigInt(Math.round(usd * 1e9));
const cost = (prompt: number, completion: number) =>
  (BigInt(prompt) * PRICE.prompt + BigInt(completion) * PRICE.completion + 999n) / 1000n;

async function balance(base: TestGateway, accountId: string): Promise<{ balance: bigint; sum: bigint }> {
  const account = await base.admin('GET', `/admin/accounts/${accountId}`);
  const ledger = await base.admin('GET', `/admin/accounts/${accountId}/ledger?limit=500`);
  const sum = (ledger.body.data as Array<{ amount: number }>).reduce((s, e) => s + nano(e.amount), 0n);
  return { balance: nano(account.body.balance.credits), sum };
}

async function reservationsOpen(base: TestGateway): Promise<number> {
  const res = await fetch(`${base.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  return Number(/^tollgate_reservations_open(?:\{[^}]*\})? (\S+)$/m.exec(await res.text())![1]);
}

/** Reads an SSE answer as it arrives, keeping the delivered text and the last events only. */
async function readStream(res: Response): Promise<{ text: string; events: string[] }> {
  const decoder = new TextDecoder();
  const reader = res.body!.getReader();
  let buffer = '';
  let text = '';
  const events: string[] = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const data = buffer.slice(0, end).replace(/^data: /, '');
      buffer = buffer.slice(end + 2);
      if (!data.startsWith('{')) {
        events.push(data);
        continue;
      }
      const event = JSON.parse(data);
      text += event.choices?.[0]?.delta?.content ?? '';
      events.push(event.error ? data : '{chunk}');
      if (events.length > 8) events.shift();
    }
  }
  return { text, events };
}

describe('upstream faults', { timeout: 60_000 }, () => {
  for (const row of ROWS) {
    it(`${row.name} (${row.stream ? 'stream' : 'JSON'})`, async () => {
      const base = row.behavior ? gw : refused;
      mock.setBehavior(row.behavior ?? { kind: 'ok' });
      const { id, key } = await base.account();
      const before = await balance(base, id);
      const request = {
        model: MODEL,
        messages: [{ role: 'user' as const, content: `Fault: ${row.name}` }],
        max_tokens: 100,
        stream: row.stream,
      };
      let rssPeak = process.memoryUsage().rss;
      const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage().rss)), 20);
      const rssBefore = process.memoryUsage().rss;
      const started = Date.now();
      let charged: bigint;
      try {
        if (row.status !== undefined) {
          // Before the first byte: an ordinary HTTP error, as the openai SDK sees it.
          const error = await base
            .client(key)
            .chat.completions.create(request)
            .then(
              () => undefined,
              (e: unknown) => e,
            );
          expect(error).toBeInstanceOf(APIError);
          const api = error as APIError;
          expect(api.status).toBe(row.status);
          expect(api.error).toMatchObject({ type: 'upstream_error', code: row.code, param: null });
          expect(typeof (api.error as { message?: unknown }).message).toBe('string');
          charged = 0n;
        } else {
          const res = await fetch(`${base.baseURL}/chat/completions`, {
            method: 'POST',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            body: JSON.stringify(request),
          });
          expect(res.status).toBe(200);
          const { text, events } = await readStream(res);
          expect(events).not.toContain('[DONE]');
          const last = JSON.parse(events[events.length - 1]!);
          expect(last.error).toMatchObject({ type: 'upstream_error', code: row.code, param: null });
          if (row.delivered === 'huge') expect(text.length).toBe(16 * MB);
          else expect(text).toBe(row.delivered);
          // Billed for what was delivered, but never past what the request allowed (an endless stream sent more).
          charged = cost(countPromptTokens(request), Math.min(countTextTokens(text), request.max_tokens));
        }
      } finally {
        clearInterval(sampler);
      }
      const after = await balance(base, id);
      expect(before.balance - after.balance).toBe(charged);
      expect(after.sum).toBe(after.balance);
      for (let i = 0; (await reservationsOpen(base)) !== 0; i++) {
        expect(i).toBeLessThan(50);
        await sleep(20);
      }
      if (row.name.startsWith('enormous')) {
        const grew = (rssPeak - rssBefore) / MB;
        console.log(
          `${row.name} (${row.stream ? 'stream' : 'JSON'}): ${Date.now() - started} ms, RSS peak +${grew.toFixed(0)} MB (gateway, mock and client in one process)`,
        );
        expect(grew).toBeLessThan(300);
      }
    });
  }

  it('every upstream fault row left the gateway serving', async () => {
    mock.setBehavior({ kind: 'ok' });
    const { key } = await gw.account();
    const ok = await gw
      .client(key)
      .chat.completions.create({ model: MODEL, messages: [{ role: 'user', content: 'hello' }] });
    expect(ok.choices[0]!.message.content).toBe('Hello from the mock upstream.');
    expect(await reservationsOpen(gw)).toBe(0);
  });
});
