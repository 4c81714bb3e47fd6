import { describe, it, expect } from 'vitest';
import { createSandboxProvider } from '../../src/providers/sandbox/index.js';
import {
  UpstreamError,
  type UpstreamChunk,
  type ChatRequest,
  type ProviderCall,
  type ToolDefinition,
} from '../../src/providers/index.js';
import { countPromptTokens, countTextTokens } from '../../src/tokens/index.js';
import { collect } from '../support/provider-calls.js';

const provider = createSandboxProvider();

function call(body: Partial<ChatRequest>, signal = new AbortController().signal): ProviderCall {
  const request: ChatRequest = {
    model: 'echo',
    messages: [{ role: 'user', content: 'Hello there, sandbox!' }],
    ...body,
  };
  return { body: request, signal, requestId: 'req_1', timeoutMs: 10_000 };
}

const complete = (body: Partial<ChatRequest>) => provider.complete(call(body));
const contentOf = async (body: Partial<ChatRequest>) => (await complete(body)).choices[0]!.message.content!;
const wordCount = (text: string) => text.split(/\s+/).filter(Boolean).length;

/** Rebuilds per-choice content, tool calls and finish reasons from stream chunks. */
function reassemble(chunks: UpstreamChunk[]) {
  const choices = new Map<
    number,
    { content: string | null; toolCall?: { id?: string; name?: string; arguments: string }; finish?: string | null }
  >();
  for (const chunk of chunks) {
    for (const { index, delta, finish_reason } of chunk.choices) {
      const choice = choices.get(index) ?? { content: null };
      choices.set(index, choice);
      if (typeof delta.content === 'string') choice.content = (choice.content ?? '') + delta.content;
      for (const toolDelta of delta.tool_calls ?? []) {
        choice.toolCall ??= { arguments: '' };
        choice.toolCall.id ??= toolDelta.id;
        choice.toolCall.name ??= toolDelta.function?.name;
        choice.toolCall.arguments += toolDelta.function?.arguments ?? '';
      }
      if (finish_reason) choice.finish = finish_reason;
    }
  }
  return [...choices.entries()].sort(([a], [b]) => a - b).map(([, choice]) => choice);
}

const weather: ToolDefinition = {
  type: 'function',
  function: {
    name: 'get_weather',
    parameters: {
      type: 'object',
      properties: {
        city: { type: 'string' },
        days: { type: 'integer' },
        metric: { type: 'boolean' },
        unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
        hours: { type: 'array', items: { type: 'number' } },
        where: { type: 'object', properties: { lat: { type: 'number' } } },
      },
      required: ['city', 'days'],
    },
  },
};
const search: ToolDefinition = {
  type: 'function',
  function: {
    name: 'search',
    parameters: { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] },
  },
};

describe('sandbox provider: echo', () => {
  it('replies with the last user message for echo and for any other model name', async () => {
    const messages: ChatRequest['messages'] = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: 'second question' },
    ];
    expect(await contentOf({ messages })).toBe('second question');
    expect(await contentOf({ model: 'gpt-4o', messages })).toBe('second question');
  });

  it('joins text parts, ignores images, and replies empty without a user message', async () => {
    const image = { type: 'image_url', image_url: { url: 'https://example.com/a.png' } } as const;
    const parts = [{ type: 'text', text: 'look ' }, image, { type: 'text', text: 'here' }] as const;
    expect(await contentOf({ messages: [{ role: 'user', content: [...parts] }] })).toBe('look here');
    expect(await contentOf({ messages: [{ role: 'system', content: 'only system' }] })).toBe('');
  });

  it('presents a ChatCompletion with usage counted like the gateway counts', async () => {
    const result = await complete({});
    expect(result).toMatchObject({
      id: 'chatcmpl-req_1',
      object: 'chat.completion',
      model: 'echo',
      system_fingerprint: 'fp_sandbox',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello there, sandbox!' }, finish_reason: 'stop' }],
    });
    expect(Math.abs(result.created - Date.now() / 1000)).toBeLessThan(5);
    const prompt = countPromptTokens(call({}).body);
    const completion = countTextTokens('Hello there, sandbox!');
    expect(result.usage).toEqual({
      prompt_tokens: prompt,
      completion_tokens: completion,
      total_tokens: prompt + completion,
    });
  });
});

describe('sandbox provider: lorem', () => {
  const ask = (text: string, extra: Partial<ChatRequest> = {}) =>
    contentOf({ model: 'lorem', messages: [{ role: 'user', content: text }], ...extra });

  it('is deterministic for a prompt and differs between prompts', async () => {
    const first = await ask('Tell me a story');
    expect(await ask('Tell me a story')).toBe(first);
    expect(await ask('Tell me another story')).not.toBe(first);
    expect(await ask('Tell me a story', { seed: 7 })).not.toBe(first);
  });

  it('writes 30 to 60 latin words', async () => {
    for (const prompt of ['a', 'b', 'c', 'd', 'e']) {
      const text = await ask(prompt);
      expect(wordCount(text)).toBeGreaterThanOrEqual(30);
      expect(wordCount(text)).toBeLessThanOrEqual(60);
      expect(text).toMatch(/^[A-Z][A-Za-z .]+\.$/);
    }
  });
});

describe('sandbox provider: limits and stops', () => {
  it('cuts at max_tokens on a token boundary with finish_reason length', async () => {
    const full = await contentOf({ model: 'lorem' });
    const result = await complete({ model: 'lorem', max_tokens: 5 });
    const choice = result.choices[0]!;
    expect(choice.finish_reason).toBe('length');
    expect(full.startsWith(choice.message.content!)).toBe(true);
    expect(countTextTokens(choice.message.content!)).toBeLessThanOrEqual(5);
    expect(countTextTokens(choice.message.content!)).toBeGreaterThan(0);
    expect(result.usage!.completion_tokens).toBeLessThanOrEqual(5);
  });

  it('uses the smaller of max_tokens and max_completion_tokens', async () => {
    const a = await complete({ model: 'lorem', max_completion_tokens: 3 });
    const b = await complete({ model: 'lorem', max_tokens: 50, max_completion_tokens: 3 });
    expect(a.usage!.completion_tokens).toBeLessThanOrEqual(3);
    expect(b.choices[0]!.message.content).toBe(a.choices[0]!.message.content);
    expect(b.choices[0]!.finish_reason).toBe('length');
  });

  it('keeps a true prefix when a cut falls inside a multi-byte character', async () => {
    const text = '日本語のテキストと絵文字 🎉🎊 です';
    for (let limit = 0; limit <= countTextTokens(text); limit++) {
      const content = await contentOf({ messages: [{ role: 'user', content: text }], max_tokens: limit });
      expect(text.startsWith(content)).toBe(true);
      expect(countTextTokens(content)).toBeLessThanOrEqual(limit);
    }
  });

  it('is not cut, finish_reason stop, when the reply fits', async () => {
    const choice = (await complete({ max_tokens: 100 })).choices[0]!;
    expect(choice).toMatchObject({ message: { content: 'Hello there, sandbox!' }, finish_reason: 'stop' });
  });

  it('cuts before the first stop sequence', async () => {
    const messages: ChatRequest['messages'] = [{ role: 'user', content: 'one, two. three! four' }];
    expect(await contentOf({ messages, stop: ['!', '.'] })).toBe('one, two');
    expect(await contentOf({ messages, stop: 'three' })).toBe('one, two. ');
    const choice = (await complete({ messages, stop: ['x'] })).choices[0]!;
    expect(choice).toMatchObject({ message: { content: 'one, two. three! four' }, finish_reason: 'stop' });
  });
});

describe('sandbox provider: n', () => {
  it('returns n choices; lorem choices differ; usage sums them', async () => {
    const result = await complete({ model: 'lorem', n: 3 });
    expect(result.choices.map((choice) => choice.index)).toEqual([0, 1, 2]);
    const contents = result.choices.map((choice) => choice.message.content!);
    expect(new Set(contents).size).toBe(3);
    const sum = contents.reduce((total, text) => total + countTextTokens(text), 0);
    expect(result.usage!.completion_tokens).toBe(sum);
  });

  it('rejects n outside 1..8 as a 400 on param n', async () => {
    for (const n of [0, 9, 129, 1.5]) {
      const error = await complete({ n }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UpstreamError);
      expect(error).toMatchObject({ provider: 'sandbox', kind: 'http', status: 400, param: 'n' });
    }
  });
});

describe('sandbox provider: tools', () => {
  it('calls the first tool for tool_choice required, with arguments typed by the schema', async () => {
    const result = await complete({ tools: [weather, search], tool_choice: 'required' });
    const choice = result.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    const [toolCall] = choice.message.tool_calls!;
    expect(toolCall).toMatchObject({
      id: expect.stringMatching(/^call_\w+$/),
      type: 'function',
      function: { name: 'get_weather' },
    });
    expect(JSON.parse(toolCall!.function.arguments)).toEqual({
      city: 'Hello there, sandbox!',
      days: 1,
      metric: true,
      unit: 'celsius',
      hours: [],
      where: { lat: 1 },
    });
    const { name, arguments: args } = toolCall!.function;
    expect(result.usage!.completion_tokens).toBe(countTextTokens(name) + countTextTokens(args));
  });

  it('calls the named tool, and rejects a name not in tools', async () => {
    const named = { type: 'function', function: { name: 'search' } } as const;
    const toolCall = (await complete({ tools: [weather, search], tool_choice: named })).choices[0]!.message
      .tool_calls![0]!;
    expect(toolCall.function.name).toBe('search');
    expect(JSON.parse(toolCall.function.arguments)).toEqual({ query: 'Hello there, sandbox!' });

    const missing = { type: 'function', function: { name: 'nope' } } as const;
    const error = await complete({ tools: [weather], tool_choice: missing }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamError);
    expect(error).toMatchObject({ status: 400, param: 'tool_choice' });
  });

  it('cuts tool-call arguments at max_tokens with finish_reason length', async () => {
    const result = await complete({ tools: [weather], tool_choice: 'required', max_tokens: 6 });
    expect(result.choices[0]!.finish_reason).toBe('length');
    expect(result.usage!.completion_tokens).toBeLessThanOrEqual(6);
  });

  it('answers in text for tool_choice auto, none or absent', async () => {
    for (const tool_choice of ['auto', 'none', undefined] as const) {
      const choice = (await complete({ tools: [weather], tool_choice })).choices[0]!;
      expect(choice).toMatchObject({ message: { content: 'Hello there, sandbox!' }, finish_reason: 'stop' });
      expect(choice.message.tool_calls).toBeUndefined();
    }
  });
});

describe('sandbox provider: JSON mode', () => {
  it('replies with a JSON object for json_object', async () => {
    const content = await contentOf({ model: 'lorem', response_format: { type: 'json_object' } });
    const parsed = JSON.parse(content) as { reply: string };
    expect(parsed.reply).toBe(await contentOf({ model: 'lorem' }));
  });

  it('fills a json_schema', async () => {
    const schema = { type: 'object', properties: { answer: { type: 'string' }, score: { type: 'number' } } };
    const content = await contentOf({ response_format: { type: 'json_schema', json_schema: { name: 'r', schema } } });
    expect(JSON.parse(content)).toEqual({ answer: 'Hello there, sandbox!', score: 1 });
  });
});

describe('sandbox provider: streaming', () => {
  const bodies: Array<[string, Partial<ChatRequest>]> = [
    ['echo', {}],
    ['lorem with n=2', { model: 'lorem', n: 2 }],
    ['lorem cut by max_tokens', { model: 'lorem', max_tokens: 7 }],
    ['stop', { stop: ',' }],
    ['json mode', { model: 'lorem', response_format: { type: 'json_object' } }],
    ['empty reply', { messages: [{ role: 'system', content: 'none' }] }],
  ];

  it.each(bodies)('streams the same answer and usage as complete (%s)', async (_, body) => {
    const expected = await complete(body);
    const chunks = await collect(provider.stream(call(body)));

    expect(new Set(chunks.map((chunk) => chunk.id))).toEqual(new Set([expected.id]));
    expect(new Set(chunks.map((chunk) => chunk.created)).size).toBe(1);
    expect(
      chunks.every((chunk) => chunk.object === 'chat.completion.chunk' && chunk.model === (body.model ?? 'echo')),
    ).toBe(true);

    for (const choice of expected.choices) {
      const first = chunks.find((chunk) => chunk.choices[0]?.index === choice.index)!;
      expect(first.choices[0]!.delta).toEqual({ role: 'assistant', content: '' });
    }
    expect(reassemble(chunks)).toEqual(
      expected.choices.map((choice) => ({ content: choice.message.content, finish: choice.finish_reason })),
    );
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toEqual(expected.usage);
    expect(chunks.slice(0, -1).every((chunk) => chunk.choices.length === 1 && chunk.usage === undefined)).toBe(true);
  });

  it('sends content in several small pieces', async () => {
    const chunks = await collect(provider.stream(call({ model: 'lorem' })));
    const pieces = chunks.flatMap((chunk) => chunk.choices.map((choice) => choice.delta.content)).filter(Boolean);
    expect(pieces.length).toBeGreaterThan(20);
    expect(pieces.every((piece) => countTextTokens(piece!) <= 6)).toBe(true);
  });

  it('streams a tool call as OpenAI does and it reassembles to the same call', async () => {
    const body: Partial<ChatRequest> = { tools: [weather], tool_choice: 'required' };
    const expected = (await complete(body)).choices[0]!;
    const chunks = await collect(provider.stream(call(body)));
    const opening = chunks[0]!.choices[0]!.delta;
    expect(opening).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [
        {
          index: 0,
          id: expected.message.tool_calls![0]!.id,
          type: 'function',
          function: { name: 'get_weather', arguments: '' },
        },
      ],
    });
    const [choice] = reassemble(chunks);
    const toolCall = expected.message.tool_calls![0]!;
    expect(choice).toEqual({
      content: null,
      toolCall: { id: toolCall.id, name: 'get_weather', arguments: toolCall.function.arguments },
      finish: 'tool_calls',
    });
    expect(chunks.filter((chunk) => chunk.choices[0]?.delta.tool_calls).length).toBeGreaterThan(2);
  });

  it('stops when the signal aborts', async () => {
    const controller = new AbortController();
    const chunks: UpstreamChunk[] = [];
    for await (const chunk of provider.stream(call({ model: 'lorem' }, controller.signal))) {
      chunks.push(chunk);
      if (chunks.length === 3) controller.abort();
    }
    expect(chunks).toHaveLength(3);
    expect(chunks.some((chunk) => chunk.usage)).toBe(false);

    const aborted = new AbortController();
    aborted.abort();
    expect(await collect(provider.stream(call({}, aborted.signal)))).toEqual([]);
  });

  it('observes an abort that happens while the consumer is not pulling', async () => {
    const controller = new AbortController();
    const iterator = provider.stream(call({ model: 'lorem' }, controller.signal))[Symbol.asyncIterator]();
    expect((await iterator.next()).done).toBe(false);
    setImmediate(() => controller.abort());
    const rest: unknown[] = [];
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) rest.push(next.value);
    expect(rest).toEqual([]);
  });
});
