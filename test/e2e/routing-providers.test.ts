/**
 * End to end: the official `openai` SDK against tollgate, whose Anthropic and Gemini models are served by local
 * servers speaking Anthropic's and Gemini's own wire formats.
 */
import { APIError } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_MODELS } from '../../src/config/default-catalog.js';
import { countPromptTokens, countTextTokens } from '../../src/tokens/index.js';
import type { TestGateway } from '../support/gateway.js';
import { ANTHROPIC_TEXT, type MockAnthropic } from '../support/mock-anthropic.js';
import { GEMINI_TEXT, type MockGemini } from '../support/mock-gemini.js';
import { startWithNativeProviders, type NativeProviders } from '../support/native-providers.js';

const CLAUDE = 'claude-haiku-5-5';
const GEMINI = 'gemini-3.5-flash-lite';
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';
let anthropic: MockAnthropic;
let gemini: MockGemini;
let gw: TestGateway;

const nano = (usd: number) => BigInt(Math.round(usd * 1e9));
function costNano(modelId: string, prompt: number, completion: number): bigint {
  const { pricing } = DEFAULT_MODELS.find((m) => m.id === modelId)!;
  return (BigInt(prompt) * nano(pricing.prompt) + BigInt(completion) * nano(pricing.completion) + 999n) / 1000n;
}
/** The provider's bill of a chat-shaped usage: cache reads and writes at their own catalog prices, rounded up once. */
function billNano(modelId: string, usage: any): bigint {
  const { pricing } = DEFAULT_MODELS.find((m) => m.id === modelId)!;
  const read = usage.prompt_tokens_details?.cached_tokens ?? 0;
  const written = usage.cache_creation_input_tokens ?? 0;
  const hour = usage.cache_creation?.ephemeral_1h_input_tokens ?? 0;
  const per1k =
    BigInt(usage.prompt_tokens - read - written) * nano(pricing.prompt) +
    BigInt(read) * nano(pricing.input_cache_read ?? pricing.prompt) +
    BigInt(written - hour) * nano(pricing.input_cache_write ?? pricing.prompt) +
    BigInt(hour) * nano(pricing.input_cache_write_1h ?? pricing.input_cache_write ?? pricing.prompt) +
    BigInt(usage.completion_tokens) * nano(pricing.completion);
  return (per1k + 999n) / 1000n;
}
async function balance(key: string): Promise<bigint> {
  const res = await fetch(`${gw.baseURL}/credits`, { headers: { authorization: `Bearer ${key}` } });
  return nano(((await res.json()) as any).balance.credits);
}
async function apiError(promise: Promise<unknown>): Promise<APIError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(APIError);
  return error as APIError;
}
const user = (text = 'Hello?') => [{ role: 'user' as const, content: text }];

let providers: NativeProviders | undefined;
beforeAll(async () => {
  providers = await startWithNativeProviders();
  ({ gw, anthropic, gemini } = providers);
});
afterAll(async () => {
  await providers?.close();
});
beforeEach(() => {
  anthropic.setBehavior({ kind: 'ok' });
  gemini.setBehavior({ kind: 'ok' });
});

for (const [model, name] of [
  [CLAUDE, 'Anthropic'],
  [GEMINI, 'Gemini'],
] as const) {
  const expected = model === CLAUDE ? ANTHROPIC_TEXT : GEMINI_TEXT;
  const mock = () => (model === CLAUDE ? anthropic : gemini);
  describe(`${name} through the SDK`, () => {
    it('plain: the answer, the provider header, usage and the exact cost', async () => {
      const { key } = await gw.account();
      const before = await balance(key);
      const { data, response } = await gw
        .client(key)
        .chat.completions.create({ model, messages: user() })
        .withResponse();
      expect(response.headers.get('x-tollgate-provider')).toBe(model === CLAUDE ? 'anthropic' : 'gemini');
      expect(data.model).toBe(model);
      expect(data.choices[0]!.message.content).toBe(expected);
      expect(data.choices[0]!.finish_reason).toBe('stop');
      const usage = data.usage as any;
      expect(usage.prompt_tokens).toBeGreaterThan(0);
      const charged = before - (await balance(key));
      expect(charged).toBe(billNano(model, usage));
      expect(nano(usage.cost)).toBe(charged);
      expect(mock().requests.at(-1)!.body.model ?? mock().requests.at(-1)!.path).toContain(model);
    });

    it('streaming: chunks as the provider streams them, usage with cost at the end', async () => {
      const { key } = await gw.account();
      const stream = await gw
        .client(key)
        .chat.completions.create({ model, messages: user(), stream: true, stream_options: { include_usage: true } });
      let text = '';
      let usage: any;
      let finish: string | null = null;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        finish = chunk.choices[0]?.finish_reason ?? finish;
        if (chunk.usage) usage = chunk.usage;
        expect(chunk.model).toBe(model);
      }
      expect(text).toBe(expected);
      expect(finish).toBe('stop');
      expect(usage.cost).toBeGreaterThan(0);
    });

    it('tools: tool_calls come back with finish_reason tool_calls, streamed and not', async () => {
      const { key } = await gw.account();
      const tools = [
        {
          type: 'function' as const,
          function: { name: 'weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
        },
      ];
      const enqueue = () =>
        model === CLAUDE
          ? anthropic.enqueue({ kind: 'ok', tools: [{ id: 'toolu_1', name: 'weather', input: { city: 'Oslo' } }] })
          : gemini.enqueue({ kind: 'ok', calls: [{ name: 'weather', args: { city: 'Oslo' } }] });
      enqueue();
      const res = await gw.client(key).chat.completions.create({ model, messages: user('Weather in Oslo?'), tools });
      expect(res.choices[0]!.finish_reason).toBe('tool_calls');
      const toolCall = res.choices[0]!.message.tool_calls![0]! as any;
      expect(toolCall.function).toEqual({ name: 'weather', arguments: '{"city":"Oslo"}' });
      enqueue();
      const stream = await gw
        .client(key)
        .chat.completions.create({ model, messages: user('Weather in Oslo?'), tools, stream: true });
      let args = '';
      for await (const chunk of stream) args += chunk.choices[0]?.delta.tool_calls?.[0]?.function?.arguments ?? '';
      expect(JSON.parse(args)).toEqual({ city: 'Oslo' });
      // The tool result goes back in the provider's own shape.
      await gw.client(key).chat.completions.create({
        model,
        tools,
        messages: [
          ...user('Weather in Oslo?'),
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: toolCall.id, type: 'function', function: toolCall.function }],
          },
          { role: 'tool', tool_call_id: toolCall.id, content: '{"celsius": 3}' },
        ],
      });
      const sent = JSON.stringify(mock().requests.at(-1)!.body);
      expect(sent).toContain(model === CLAUDE ? '"tool_result"' : '"functionResponse"');
    });

    it('vision: URL and base64 images reach the provider in its format', async () => {
      const { key } = await gw.account();
      await gw.client(key).chat.completions.create({
        model,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'What is this?' },
              { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
              { type: 'image_url', image_url: { url: 'https://example.com/a.jpg' } },
            ],
          },
        ],
      });
      const sent = JSON.stringify(mock().requests.at(-1)!.body);
      expect(sent).toContain(
        model === CLAUDE
          ? `"media_type":"image/png","data":"${PNG}"`
          : `"inlineData":{"mimeType":"image/png","data":"${PNG}"}`,
      );
      expect(sent).toContain('https://example.com/a.jpg');
    });

    it('JSON mode: the answer parses as JSON', async () => {
      const { key } = await gw.account();
      const res = await gw
        .client(key)
        .chat.completions.create({ model, messages: user('Give JSON'), response_format: { type: 'json_object' } });
      expect(JSON.parse(res.choices[0]!.message.content!)).toEqual({ answer: 'ok', n: 1 });
    });
  });
}

describe('mapped errors (nothing charged)', () => {
  const cases: Array<[number, number, string]> = [
    [400, 400, 'invalid_request'],
    [401, 502, 'upstream_error'],
    [402, 502, 'upstream_error'],
    [403, 502, 'upstream_error'],
    [404, 502, 'upstream_error'],
    [413, 400, 'invalid_request'],
    [429, 502, 'upstream_error'],
    [500, 502, 'upstream_error'],
    [529, 502, 'upstream_error'],
  ];
  for (const [upstream, status, code] of cases) {
    it(`Anthropic ${upstream} is ${status} ${code}`, async () => {
      const { key } = await gw.account();
      const before = await balance(key);
      anthropic.setBehavior({ kind: 'error', status: upstream, message: `anthropic says ${upstream}` });
      for (const stream of [false, true]) {
        const error = await apiError(
          gw.client(key).chat.completions.create({ model: CLAUDE, messages: user(), stream }),
        );
        expect(error.status).toBe(status);
        expect(error.code).toBe(code);
        // The upstream's words reach the client only for its validation errors; otherwise a fixed message.
        if (status === 400) expect(error.message).toContain(`anthropic says ${upstream}`);
        else expect(error.message).toBe(`502 The provider 'anthropic' failed with status ${upstream}`);
      }
      expect(await balance(key)).toBe(before);
    });
  }
  for (const [upstream, status, code] of [
    [400, 400, 'invalid_request'],
    [403, 502, 'upstream_error'],
    [429, 502, 'upstream_error'],
    [503, 502, 'upstream_error'],
  ] as const) {
    it(`Gemini ${upstream} is ${status} ${code}`, async () => {
      const { key } = await gw.account();
      gemini.setBehavior({ kind: 'error', status: upstream, message: `gemini says ${upstream}` });
      const error = await apiError(gw.client(key).chat.completions.create({ model: GEMINI, messages: user() }));
      expect([error.status, error.code]).toEqual([status, code]);
      if (status === 400) expect(error.message).toContain(`gemini says ${upstream}`);
      else expect(error.message).toBe(`502 The provider 'gemini' failed with status ${upstream}`);
    });
  }

  const broken: Array<[string, string, () => void]> = [
    ['Anthropic stream cut', CLAUDE, () => anthropic.enqueue({ kind: 'cut', afterDeltas: 3 })],
    ['Anthropic malformed event', CLAUDE, () => anthropic.enqueue({ kind: 'malformed', afterDeltas: 3 })],
    ['Anthropic overloaded error event', CLAUDE, () => anthropic.enqueue({ kind: 'stream-error', afterDeltas: 3 })],
    ['Gemini stream cut', GEMINI, () => gemini.enqueue({ kind: 'cut', afterChunks: 3 })],
    ['Gemini malformed event', GEMINI, () => gemini.enqueue({ kind: 'malformed', afterChunks: 3 })],
  ];
  for (const [what, model, enqueue] of broken) {
    it(`${what} after the first byte: one error event, charged for what was delivered, no retry`, async () => {
      const { key } = await gw.account();
      const before = await balance(key);
      const calls = anthropic.requests.length + gemini.requests.length;
      enqueue();
      const request = { model, messages: user('Story?'), stream: true as const };
      const stream = await gw.client(key).chat.completions.create(request);
      let text = '';
      const error = await apiError(
        (async () => {
          for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
        })(),
      );
      expect(text).toBe('part0 part1 part2 ');
      expect((error.error as any)?.code ?? error.code).toBe('upstream_error');
      expect(anthropic.requests.length + gemini.requests.length).toBe(calls + 1);
      const charged = before - (await balance(key));
      // The prompt as the provider reported it at the stream's start (Anthropic's message_start, Gemini's every
      // event); the completion as delivered.
      const start = model === CLAUDE ? anthropic.bills.at(-1)!.start : undefined;
      const prompt = start
        ? {
            prompt_tokens:
              start.input_tokens + (start.cache_read_input_tokens ?? 0) + (start.cache_creation_input_tokens ?? 0),
            prompt_tokens_details: { cached_tokens: start.cache_read_input_tokens ?? 0 },
            cache_creation_input_tokens: start.cache_creation_input_tokens ?? 0,
          }
        : {
            prompt_tokens: gemini.requests.at(-1)!.usage.promptTokenCount,
            prompt_tokens_details: { cached_tokens: gemini.requests.at(-1)!.usage.cachedContentTokenCount ?? 0 },
          };
      expect(charged).toBe(billNano(model, { ...prompt, completion_tokens: countTextTokens(text) }));
    });
  }
});

describe('token counting when the stream reports no usage', () => {
  it('Gemini without usageMetadata: prompt and completion counted with the tokenizer, and charged', async () => {
    const { key } = await gw.account();
    const before = await balance(key);
    gemini.enqueue({ kind: 'ok', usage: false });
    const request = {
      model: GEMINI,
      messages: user('Count me.'),
      stream: true as const,
      stream_options: { include_usage: true },
    };
    let usage: any;
    for await (const chunk of await gw.client(key).chat.completions.create(request))
      if (chunk.usage) usage = chunk.usage;
    const prompt = countPromptTokens(request);
    const completion = countTextTokens(GEMINI_TEXT);
    expect(usage).toMatchObject({ prompt_tokens: prompt, completion_tokens: completion });
    expect(before - (await balance(key))).toBe(costNano(GEMINI, prompt, completion));
  });

  it('a Gemini safety stop is finish_reason content_filter', async () => {
    const { key } = await gw.account();
    gemini.enqueue({ kind: 'ok', text: 'Some', finishReason: 'SAFETY' });
    const res = await gw.client(key).chat.completions.create({ model: GEMINI, messages: user() });
    expect(res.choices[0]!.finish_reason).toBe('content_filter');
  });
});
