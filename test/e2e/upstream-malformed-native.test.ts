/**
 * Answers in Anthropic's and Gemini's own formats that those APIs would never give: tollgate answers a clear error
 * naming the provider (a 502, or an error event once a stream has started), charges nothing it did not deliver,
 * and leaves no hold open.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, type TestGateway } from '../support/gateway.js';
import type { MockAnthropic } from '../support/mock-anthropic.js';
import type { MockGemini } from '../support/mock-gemini.js';
import { startWithNativeProviders, type NativeProviders } from '../support/native-providers.js';

const CLAUDE = 'claude-haiku-5-5';
const GEMINI = 'gemini-3.5-flash-lite';
let anthropic: MockAnthropic;
let gemini: MockGemini;
let gw: TestGateway;
let providers: NativeProviders | undefined;

beforeAll(async () => {
  providers = await startWithNativeProviders();
  ({ gw, anthropic, gemini } = providers);
});
afterAll(async () => {
  await providers?.close();
});

const nano = (usd: number): bigint => BigInt(Math.round(usd * 1e9));

async function reservationsOpen(): Promise<string | undefined> {
  const metrics = await (
    await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
  ).text();
  return /^tollgate_reservations_open(?:\{[^}]*\})? (\S+)$/m.exec(metrics)?.[1];
}

async function chat(
  key: string,
  model: string,
  stream: boolean,
): Promise<{ status: number; text: string; events: string[] }> {
  const res = await fetch(`${gw.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      model,
      messages: [{ role: 'user', content: 'Say hello.' }],
      ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
    }),
  });
  const text = await res.text();
  const events =
    stream && res.status === 200
      ? text
          .split('\n\n')
          .filter((e) => e.startsWith('data: '))
          .map((e) => e.slice(6))
      : [];
  return { status: res.status, text, events };
}

/** A 502 naming the provider, or (once a stream has begun) an error event in place of [DONE]. */
function expectUnreadable(
  answer: { status: number; text: string; events: string[] },
  provider: string,
  what: string,
): void {
  const error = answer.status === 200 ? JSON.parse(answer.events.at(-1)!).error : JSON.parse(answer.text).error;
  if (answer.status === 200) expect(answer.events, what).not.toContain('[DONE]');
  else expect(answer.status, what).toBe(502);
  expect(error?.code, what).toBe('upstream_error');
  expect(error.message, what).toContain(provider);
  expect(error.message, what).not.toMatch(/Cannot read|is not a function/);
}

const sse = (events: Array<[string | undefined, string]>) =>
  events.map(([event, data]) => `${event ? `event: ${event}\n` : ''}data: ${data}\n\n`).join('');
const message = (fields: object) => ({
  id: 'msg_1',
  type: 'message',
  role: 'assistant',
  model: 'claude',
  stop_reason: 'end_turn',
  usage: { input_tokens: 3, output_tokens: 2 },
  ...fields,
});
const start = JSON.stringify({
  type: 'message_start',
  message: {
    id: 'msg_1',
    type: 'message',
    role: 'assistant',
    model: 'claude',
    content: [],
    usage: { input_tokens: 3, output_tokens: 1 },
  },
});
const textStart = [
  'content_block_start',
  '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}',
] as [string, string];
const hello = [
  'content_block_delta',
  '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hello there"}}',
] as [string, string];
const geminiHello = [undefined, '{"candidates":[{"content":{"role":"model","parts":[{"text":"hel"}]}}]}'] as [
  undefined,
  string,
];

const CASES = {
  Anthropic: {
    model: CLAUDE,
    unreadable: [
      message({ content: [null] }),
      message({ content: ['hello'] }),
      message({ content: [{ type: 'text', text: 5 }] }),
      message({ content: [{ type: 'tool_use', id: 'toolu_1', input: {} }] }),
    ],
    uncounted: [
      message({ content: [{ type: 'text', text: 'hello there' }], usage: undefined }),
      message({ content: [{ type: 'text', text: 'hello there' }], usage: 'x' }),
    ],
    unreadableStreams: [
      sse([['message_start', 'null']]),
      sse([['message_start', start], textStart, ['content_block_delta', 'null']]),
      sse([
        ['message_start', start],
        textStart,
        hello,
        ['content_block_delta', '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":5}}'],
      ]),
      sse([
        ['message_start', start],
        textStart,
        hello,
        [
          'content_block_start',
          '{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t"}}',
        ],
      ]),
    ],
    uncountedStream: sse([
      ['message_start', start.replace(',"usage":{"input_tokens":3,"output_tokens":1}', '')],
      textStart,
      hello,
      ['message_delta', '{"type":"message_delta","delta":{"stop_reason":"end_turn"}}'],
      ['message_stop', '{"type":"message_stop"}'],
    ]),
  },
  Gemini: {
    model: GEMINI,
    unreadable: [
      { candidates: {} },
      { candidates: [null] },
      { candidates: [{ content: { parts: 'hello' } }] },
      { candidates: [{ content: { parts: [null] } }] },
      { candidates: [{ content: { parts: [{ text: 5 }] } }] },
      { candidates: [{ content: { parts: [{ functionCall: {} }] }, finishReason: 'STOP' }] },
    ],
    uncounted: [
      {
        candidates: [{ content: { role: 'model', parts: [{ text: 'hello there' }] }, finishReason: 'STOP' }],
        usageMetadata: 'x',
      },
    ],
    unreadableStreams: [
      sse([[undefined, '{"candidates":{}}']]),
      sse([geminiHello, [undefined, '{"candidates":[null]}']]),
      sse([geminiHello, [undefined, '{"candidates":[{"content":{"parts":[null]}}]}']]),
      sse([
        geminiHello,
        [undefined, '{"candidates":[{"content":{"parts":[{"functionCall":{"args":{}}}]},"finishReason":"STOP"}]}'],
      ]),
    ],
    uncountedStream: sse([
      geminiHello,
      [undefined, '{"candidates":[{"content":{"role":"model","parts":[{"text":"lo there"}]},"finishReason":"STOP"}]}'],
    ]),
  },
} as const;

describe("answers in the providers' own formats that tollgate cannot read", () => {
  for (const [provider, cases] of Object.entries(CASES)) {
    const mock = () => (provider === 'Anthropic' ? anthropic : gemini);
    const id = provider.toLowerCase();

    it(`${provider}: an unreadable answer is a 502 naming the provider; one without usage is counted by tollgate; no hold stays open`, async () => {
      const account = await gw.account();
      const start = nano((await gw.admin('GET', `/admin/accounts/${account.id}`)).body.balance.credits);
      let told = 0n;
      try {
        for (const body of cases.unreadable) {
          mock().setBehavior({ kind: 'raw', body: JSON.stringify(body) });
          expectUnreadable(await chat(account.key, cases.model, false), id, JSON.stringify(body));
          expect(await reservationsOpen()).toBe('0');
        }
        for (const body of cases.uncounted) {
          mock().setBehavior({ kind: 'raw', body: JSON.stringify(body) });
          const answer = await chat(account.key, cases.model, false);
          expect(answer.status, answer.text).toBe(200);
          const { usage } = JSON.parse(answer.text);
          // Not charged as zero tokens: tollgate's own count of the prompt and of "hello there".
          expect(usage.prompt_tokens).toBeGreaterThan(0);
          expect(usage.completion_tokens).toBeGreaterThan(0);
          expect(usage.cost).toBeGreaterThan(0);
          told += nano(usage.cost);
        }
      } finally {
        mock().setBehavior({ kind: 'ok' });
      }
      expect(await reservationsOpen()).toBe('0');
      expect(nano((await gw.admin('GET', `/admin/accounts/${account.id}`)).body.balance.credits)).toBe(start - told);
    });

    it(`${provider}: an unreadable stream event ends the stream with an error naming the provider; a stream without usage is counted by tollgate`, async () => {
      const account = await gw.account();
      try {
        for (const body of cases.unreadableStreams) {
          mock().setBehavior({ kind: 'raw', headers: { 'content-type': 'text/event-stream' }, body });
          expectUnreadable(await chat(account.key, cases.model, true), id, body);
          expect(await reservationsOpen()).toBe('0');
        }
        mock().setBehavior({
          kind: 'raw',
          headers: { 'content-type': 'text/event-stream' },
          body: cases.uncountedStream,
        });
        const answer = await chat(account.key, cases.model, true);
        expect(answer.events.at(-1)).toBe('[DONE]');
        const { usage } = JSON.parse(answer.events.at(-2)!);
        expect(usage.prompt_tokens).toBeGreaterThan(0);
        expect(usage.completion_tokens).toBeGreaterThan(0);
      } finally {
        mock().setBehavior({ kind: 'ok' });
      }
      expect(await reservationsOpen()).toBe('0');
    });
  }
});
