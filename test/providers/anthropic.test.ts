/** The Anthropic adapter against a local server following the Messages API's wire format. */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  ANTHROPIC_VERSION,
  createAnthropicProvider,
  type AnthropicProvider,
} from '../../src/providers/anthropic/index.js';
import { ANTHROPIC_TEXT, startMockAnthropic, type MockAnthropic } from '../support/mock-anthropic.js';
import { PNG, callFor, collect, failure, text } from '../support/provider-calls.js';
import { UpstreamError, type UpstreamChunk } from '../../src/providers/index.js';

const KEY = 'sk-ant-test';
let mock: MockAnthropic;
let provider: AnthropicProvider;

const call = callFor('claude-test');
const last = () => mock.requests[mock.requests.length - 1]!;

beforeAll(async () => {
  mock = await startMockAnthropic({ apiKey: KEY });
  provider = createAnthropicProvider({ id: 'anthropic', baseUrl: mock.url, apiKey: KEY });
});
afterAll(async () => {
  await provider.close();
  await mock.close();
});
beforeEach(() => mock.setBehavior({ kind: 'ok' }));

describe('request translation (asserted by the server)', () => {
  it('system and developer messages, images by URL and base64, tool calls and results, stop, temperature, top_p, max_tokens', async () => {
    const completion = await provider.complete(
      call({
        messages: [
          { role: 'system', content: 'Be terse.' },
          { role: 'developer', content: [{ type: 'text', text: 'Use English.' }] },
          {
            role: 'user',
            content: [
              { type: 'text', text: 'What is in these images, and the weather?' },
              { type: 'image_url', image_url: { url: 'https://example.com/cat.png' } },
              { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
            ],
          },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } },
            ],
          },
          { role: 'tool', tool_call_id: 'call_1', content: '{"celsius": 21}' },
          { role: 'user', content: 'Thanks.' },
        ],
        stop: ['END'],
        temperature: 1.5,
        top_p: 0.9,
        max_tokens: 77,
        user: 'user-42',
        tools: [
          {
            type: 'function',
            function: {
              name: 'weather',
              description: 'Weather of a city',
              parameters: { type: 'object', properties: { city: { type: 'string' } } },
            },
          },
        ],
        tool_choice: 'auto',
      }),
    );
    expect(completion.choices[0]!.message.content).toBe(ANTHROPIC_TEXT);
    const seen = last();
    expect(seen.path).toBe('/v1/messages');
    expect(seen.headers['x-api-key']).toBe(KEY);
    expect(seen.headers['anthropic-version']).toBe(ANTHROPIC_VERSION);
    expect(seen.headers.authorization).toBeUndefined();
    expect(seen.body.system).toEqual([
      { type: 'text', text: 'Be terse.' },
      { type: 'text', text: 'Use English.' },
    ]);
    expect(seen.body.messages.map((m: any) => m.role)).toEqual(['user', 'assistant', 'user']);
    expect(seen.body.messages[0].content.slice(1)).toEqual([
      { type: 'image', source: { type: 'url', url: 'https://example.com/cat.png' } },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
    ]);
    expect(seen.body.messages[1].content).toEqual([
      { type: 'tool_use', id: 'call_1', name: 'weather', input: { city: 'Paris' } },
    ]);
    // The tool result and the next user turn merge into one user message, as Anthropic requires.
    expect(seen.body.messages[2].content).toEqual([
      { type: 'tool_result', tool_use_id: 'call_1', content: '{"celsius": 21}' },
      { type: 'text', text: 'Thanks.' },
    ]);
    // temperature 1.5 is capped at Anthropic's 1; with top_p narrowing sampling, top_p alone is sent (see below).
    expect(seen.body).toMatchObject({
      model: 'claude-test',
      max_tokens: 77,
      stop_sequences: ['END'],
      top_p: 0.9,
      metadata: { user_id: 'user-42' },
    });
    expect(seen.body.temperature).toBeUndefined();
    expect(seen.body.tools).toEqual([
      {
        name: 'weather',
        description: 'Weather of a city',
        input_schema: { type: 'object', properties: { city: { type: 'string' } } },
      },
    ]);
    expect(seen.body.tool_choice).toEqual({ type: 'auto' });
  });

  it('temperature and top_p: one of them is sent, as Claude models since Opus 4.1 require', async () => {
    for (const [temperature, top_p, sent] of [
      [0.2, undefined, { temperature: 0.2 }],
      [undefined, 0.8, { top_p: 0.8 }],
      [1.7, undefined, { temperature: 1 }],
      [0.3, 0.9, { temperature: 0.3 }],
      [1, 0.9, { top_p: 0.9 }],
      [0.5, 1, { temperature: 0.5 }],
    ] as const) {
      await provider.complete(
        call({ ...(temperature === undefined ? {} : { temperature }), ...(top_p === undefined ? {} : { top_p }) }),
      );
      const { temperature: t, top_p: p } = last().body;
      expect({ ...(t === undefined ? {} : { temperature: t }), ...(p === undefined ? {} : { top_p: p }) }).toEqual(
        sent,
      );
    }
  });

  it('max_tokens defaults to the model limit handed by the router; tool_choice required / named / none', async () => {
    const tools = [{ type: 'function' as const, function: { name: 'f', parameters: { type: 'object' } } }];
    await provider.complete(
      call({ tools, tool_choice: 'required', parallel_tool_calls: false }, { defaultMaxTokens: 1234 }),
    );
    expect(last().body.max_tokens).toBe(1234);
    expect(last().body.tool_choice).toEqual({ type: 'any', disable_parallel_tool_use: true });
    await provider.complete(call({ tools, tool_choice: { type: 'function', function: { name: 'f' } } }));
    expect(last().body.tool_choice).toEqual({ type: 'tool', name: 'f' });
    await provider.complete(call({ tools, tool_choice: 'none' }));
    expect(last().body.tool_choice).toEqual({ type: 'none' });
  });

  it('n > 1 and unknown content parts are the client 400 before any request', async () => {
    const before = mock.requests.length;
    const n = await failure(provider.complete(call({ n: 2 })));
    expect(n).toMatchObject({ status: 400, param: 'n' });
    const audio = await failure(
      provider.complete(call({ messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: {} }] }] })),
    );
    expect(audio).toMatchObject({ status: 400, param: 'messages[0].content[0]' });
    expect(mock.requests.length).toBe(before);
  });
});

describe('answers', () => {
  it('a message becomes a chat.completion with usage (cached prompt tokens included)', async () => {
    const completion = await provider.complete(call({}));
    expect(completion).toMatchObject({
      object: 'chat.completion',
      model: 'claude-test',
      choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: ANTHROPIC_TEXT } }],
    });
    const inputTokens = Math.ceil(JSON.stringify(last().body.messages).length / 4);
    expect(completion.usage).toEqual({
      prompt_tokens: inputTokens + 2,
      completion_tokens: 5,
      total_tokens: inputTokens + 7,
      prompt_tokens_details: { cached_tokens: 2 },
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 2,
    });
  });

  it('tool_use blocks become tool_calls with finish_reason tool_calls; max_tokens becomes length', async () => {
    mock.enqueue({ kind: 'ok', tools: [{ id: 'toolu_1', name: 'weather', input: { city: 'Oslo' } }] });
    const tools = await provider.complete(call({ tools: [{ type: 'function', function: { name: 'weather' } }] }));
    expect(tools.choices[0]).toMatchObject({
      finish_reason: 'tool_calls',
      message: {
        content: null,
        tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } }],
      },
    });
    mock.enqueue({ kind: 'ok', stopReason: 'max_tokens' });
    expect((await provider.complete(call({}))).choices[0]!.finish_reason).toBe('length');
  });

  it('JSON mode forces a tool whose input is the answer text, streamed or not', async () => {
    const json = await provider.complete(call({ response_format: { type: 'json_object' } }));
    expect(last().body.tool_choice).toEqual({ type: 'tool', name: 'json_response' });
    expect(JSON.parse(json.choices[0]!.message.content!)).toEqual({ answer: 'ok', n: 1 });
    expect(json.choices[0]!.finish_reason).toBe('stop');
    const schema = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'] };
    const chunks = await collect(
      provider.stream(call({ response_format: { type: 'json_schema', json_schema: { name: 'a', schema } } })),
    );
    expect(last().body.tools[0].input_schema).toEqual(schema);
    expect(JSON.parse(text(chunks))).toEqual({ answer: 'ok', n: 1 });
    expect(chunks.some((c) => c.choices[0]?.delta.tool_calls)).toBe(false);
    expect(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0]?.finish_reason).toBe('stop');
  });
});

describe('streams', () => {
  it('text deltas arrive as chunks (thinking left out), then the finish chunk and usage', async () => {
    mock.enqueue({ kind: 'ok', thinking: true });
    const chunks = await collect(provider.stream(call({})));
    expect(last().body.stream).toBe(true);
    expect(chunks[0]!.choices[0]!.delta).toEqual({ role: 'assistant', content: '' });
    expect(text(chunks)).toBe(ANTHROPIC_TEXT);
    const end = chunks[chunks.length - 1]!;
    expect(end.choices).toEqual([]);
    expect(end.usage).toMatchObject({ completion_tokens: 5 });
    expect(chunks[chunks.length - 2]!.choices[0]!.finish_reason).toBe('stop');
  });

  it('chunks are yielded as the events arrive, not after the whole answer', async () => {
    mock.enqueue({ kind: 'ok', delayMs: 150 });
    const started = Date.now();
    const iterator = provider.stream(call({}))[Symbol.asyncIterator]();
    let firstText = 0;
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
      if (next.value.choices[0]?.delta.content && !firstText) firstText = Date.now() - started;
    }
    const total = Date.now() - started;
    expect(firstText).toBeLessThan(total - 300);
  });

  it('tool-call argument deltas stream with their index, id and name first', async () => {
    mock.enqueue({
      kind: 'ok',
      tools: [
        { id: 'toolu_a', name: 'a', input: { x: 'a long argument value' } },
        { id: 'toolu_b', name: 'b', input: { y: 2 } },
      ],
    });
    const chunks = await collect(
      provider.stream(
        call({
          tools: [
            { type: 'function', function: { name: 'a' } },
            { type: 'function', function: { name: 'b' } },
          ],
        }),
      ),
    );
    const deltas = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    expect(deltas[0]).toEqual({ index: 0, id: 'toolu_a', type: 'function', function: { name: 'a', arguments: '' } });
    const args = (i: number) =>
      deltas
        .filter((d) => d.index === i)
        .map((d) => d.function?.arguments ?? '')
        .join('');
    expect(deltas.filter((d) => d.index === 0).length).toBeGreaterThan(2);
    expect(JSON.parse(args(0))).toEqual({ x: 'a long argument value' });
    expect(JSON.parse(args(1))).toEqual({ y: 2 });
    expect(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0]?.finish_reason).toBe('tool_calls');
  });

  it('a stream that closes after message_delta without message_stop is complete, with its usage', async () => {
    mock.enqueue({ kind: 'ok', noStop: true });
    const chunks = await collect(provider.stream(call({})));
    expect(text(chunks)).toBe(ANTHROPIC_TEXT);
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe('stop');
    expect(chunks.at(-1)!).toMatchObject({ choices: [], usage: { completion_tokens: 5 } });
  });

  it('a stream cut mid-way, a malformed event and an error event fail after the chunks already sent', async () => {
    for (const [behavior, kind, status] of [
      [{ kind: 'cut', afterDeltas: 3 }, 'protocol', undefined],
      [{ kind: 'malformed', afterDeltas: 3 }, 'protocol', undefined],
      [{ kind: 'stream-error', afterDeltas: 3, type: 'overloaded_error' }, 'http', 529],
      [{ kind: 'stream-error', afterDeltas: 3, type: 'rate_limit_error' }, 'http', 429],
      [{ kind: 'stream-error', afterDeltas: 3, type: 'billing_error' }, 'http', 402],
      [{ kind: 'stream-error', afterDeltas: 3, type: 'api_error' }, 'http', 500],
    ] as const) {
      mock.enqueue(behavior);
      const chunks: UpstreamChunk[] = [];
      const error = await failure(
        (async () => {
          for await (const chunk of provider.stream(call({}))) chunks.push(chunk);
        })(),
      );
      expect(text(chunks)).toBe('part0 part1 part2 ');
      expect(error.kind).toBe(kind);
      expect(error.status).toBe(status);
    }
  });
});

describe('errors', () => {
  for (const [status, type] of [
    [400, 'invalid_request_error'],
    [401, 'authentication_error'],
    [402, 'billing_error'],
    [403, 'permission_error'],
    [404, 'not_found_error'],
    [413, 'request_too_large'],
    [429, 'rate_limit_error'],
    [500, 'api_error'],
    [529, 'overloaded_error'],
  ] as const) {
    it(`HTTP ${status} ${type} keeps its status and message`, async () => {
      mock.enqueue({ kind: 'error', status, type, message: `mock says ${type}` });
      const error = await failure(provider.complete(call({})));
      expect(error).toMatchObject({ kind: 'http', status, message: `mock says ${type}` });
    });
  }

  it('a wrong key is the server 401; a refused connection is a connection error; probes list models', async () => {
    const wrong = createAnthropicProvider({ id: 'anthropic', baseUrl: mock.url, apiKey: 'nope' });
    expect(await failure(wrong.complete(call({})))).toMatchObject({ status: 401 });
    await expect(wrong.probe!(AbortSignal.timeout(2_000))).rejects.toBeInstanceOf(UpstreamError);
    await wrong.close();
    await provider.probe!(AbortSignal.timeout(2_000));
    expect(last().path).toBe('/v1/models?limit=1');
    const closed = createAnthropicProvider({ id: 'anthropic', baseUrl: 'http://127.0.0.1:9/v1', apiKey: KEY });
    expect((await failure(closed.complete(call({})))).kind).toBe('connection');
    await closed.close();
  });

  it('an upstream that never answers times out', async () => {
    mock.enqueue({ kind: 'hang' });
    expect((await failure(provider.complete(call({}, { timeoutMs: 200 })))).kind).toBe('timeout');
  });
});
