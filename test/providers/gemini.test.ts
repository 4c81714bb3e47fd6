/** The Gemini adapter against a local server following the generateContent wire format. */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createGeminiProvider, type GeminiProvider } from '../../src/providers/gemini/index.js';
import { GEMINI_TEXT, startMockGemini, type MockGemini } from '../support/mock-gemini.js';
import { PNG, callFor, collect, failure, text } from '../support/provider-calls.js';
import type { UpstreamChunk, ChatRequest } from '../../src/providers/index.js';

const KEY = 'gemini-test-key';
let mock: MockGemini;
let provider: GeminiProvider;

const call = callFor('gemini-test');
const last = () => mock.requests[mock.requests.length - 1]!;
const finish = (chunks: UpstreamChunk[]) => chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0]?.finish_reason;

beforeAll(async () => {
  mock = await startMockGemini({ apiKey: KEY });
  provider = createGeminiProvider({ id: 'gemini', baseUrl: mock.url, apiKey: KEY });
});
afterAll(async () => {
  await provider.close();
  await mock.close();
});
beforeEach(() => mock.setBehavior({ kind: 'ok' }));

describe('request translation (asserted by the server)', () => {
  it('system instruction, roles, inline and URL images, function declarations, calls and responses, generation config', async () => {
    await provider.complete(
      call({
        messages: [
          { role: 'system', content: 'Be terse.' },
          {
            role: 'user',
            content: [
              { type: 'text', text: 'Weather where this photo was taken?' },
              { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
              { type: 'image_url', image_url: { url: 'https://example.com/photo.webp' } },
            ],
          },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'call_9', type: 'function', function: { name: 'weather', arguments: '{"city":"Rome"}' } },
            ],
          },
          { role: 'tool', tool_call_id: 'call_9', content: '{"celsius": 25}' },
          { role: 'tool', tool_call_id: 'call_9', content: 'plain text result' },
        ],
        max_completion_tokens: 99,
        temperature: 1.4,
        top_p: 0.5,
        stop: 'END',
        seed: 7,
        tools: [
          {
            type: 'function',
            function: {
              name: 'weather',
              description: 'Weather',
              parameters: { type: 'object', properties: { city: { type: 'string' } } },
            },
          },
        ],
        tool_choice: { type: 'function', function: { name: 'weather' } },
      }),
    );
    const seen = last();
    expect(seen.path).toBe('/v1beta/models/gemini-test:generateContent');
    expect(seen.headers['x-goog-api-key']).toBe(KEY);
    expect(seen.body.systemInstruction).toEqual({ parts: [{ text: 'Be terse.' }] });
    expect(seen.body.contents.map((c: any) => c.role)).toEqual(['user', 'model', 'user']);
    expect(seen.body.contents[0].parts.slice(1)).toEqual([
      { inlineData: { mimeType: 'image/png', data: PNG } },
      { fileData: { mimeType: 'image/webp', fileUri: 'https://example.com/photo.webp' } },
    ]);
    expect(seen.body.contents[1].parts).toEqual([{ functionCall: { name: 'weather', args: { city: 'Rome' } } }]);
    expect(seen.body.contents[2].parts).toEqual([
      { functionResponse: { name: 'weather', response: { celsius: 25 } } },
      { functionResponse: { name: 'weather', response: { content: 'plain text result' } } },
    ]);
    expect(seen.body.generationConfig).toEqual({
      maxOutputTokens: 99,
      temperature: 1.4,
      topP: 0.5,
      stopSequences: ['END'],
      seed: 7,
    });
    expect(seen.body.tools).toEqual([
      {
        functionDeclarations: [
          {
            name: 'weather',
            description: 'Weather',
            parametersJsonSchema: { type: 'object', properties: { city: { type: 'string' } } },
          },
        ],
      },
    ]);
    expect(seen.body.toolConfig).toEqual({ functionCallingConfig: { mode: 'ANY', allowedFunctionNames: ['weather'] } });
  });

  it('JSON mode sets responseMimeType (and the schema)', async () => {
    const schema = { type: 'object', properties: { answer: { type: 'string' } } };
    const completion = await provider.complete(
      call({ response_format: { type: 'json_schema', json_schema: { name: 'a', schema } } }),
    );
    expect(last().body.generationConfig).toEqual({ responseMimeType: 'application/json', responseJsonSchema: schema });
    expect(JSON.parse(completion.choices[0]!.message.content!)).toEqual({ answer: 'ok', n: 1 });
  });
});

describe('answers', () => {
  it('a candidate becomes a chat.completion; usageMetadata becomes usage (thinking tokens are completion tokens, told apart as reasoning)', async () => {
    const completion = await provider.complete(call({}));
    expect(completion.choices).toEqual([
      {
        index: 0,
        message: { role: 'assistant', content: GEMINI_TEXT, refusal: null },
        logprobs: null,
        finish_reason: 'stop',
      },
    ]);
    const prompt = Math.ceil(JSON.stringify(last().body.contents).length / 4);
    expect(completion.usage).toEqual({
      prompt_tokens: prompt,
      completion_tokens: 5 + 3,
      total_tokens: prompt + 8,
      // Told apart: billed at the internal_reasoning price where the model has one.
      completion_tokens_details: { reasoning_tokens: 3 },
    });
    expect(completion.model).toBe('gemini-test');
  });

  it('function calls become tool_calls; MAX_TOKENS is length; SAFETY and a blocked prompt are content_filter', async () => {
    mock.enqueue({
      kind: 'ok',
      calls: [
        { name: 'weather', args: { city: 'Lima' } },
        { name: 'time', args: {} },
      ],
    });
    const calls = await provider.complete(call({}));
    expect(calls.choices[0]).toMatchObject({
      finish_reason: 'tool_calls',
      message: {
        content: null,
        tool_calls: [
          { id: 'call_0', type: 'function', function: { name: 'weather', arguments: '{"city":"Lima"}' } },
          { id: 'call_1', function: { name: 'time', arguments: '{}' } },
        ],
      },
    });
    mock.enqueue({ kind: 'ok', finishReason: 'MAX_TOKENS' });
    expect((await provider.complete(call({}))).choices[0]!.finish_reason).toBe('length');
    mock.enqueue({ kind: 'ok', text: 'partial', finishReason: 'SAFETY' });
    expect((await provider.complete(call({}))).choices[0]!.finish_reason).toBe('content_filter');
    mock.enqueue({ kind: 'ok', blockPrompt: true });
    expect((await provider.complete(call({}))).choices[0]).toMatchObject({
      finish_reason: 'content_filter',
      message: { content: null },
    });
    mock.enqueue({ kind: 'ok', blockPrompt: true });
    expect(finish(await collect(provider.stream(call({}))))).toBe('content_filter');
  });
});

describe('thought signatures (Gemini 3)', () => {
  const tools = [{ type: 'function' as const, function: { name: 'weather', parameters: { type: 'object' } } }];
  const gemini3 = (body: Partial<ChatRequest>) => call({ model: 'gemini-3-test', tools, ...body });

  it('a signed call keeps its signature in the tool call id, and it goes back with the call in the next turn', async () => {
    for (const stream of [false, true]) {
      mock.enqueue({
        kind: 'ok',
        calls: [
          { name: 'weather', args: { city: 'Lima' } },
          { name: 'weather', args: { city: 'Quito' } },
        ],
      });
      const calls = stream
        ? (await collect(provider.stream(gemini3({}))))
            .flatMap((c) => c.choices[0]?.delta.tool_calls ?? [])
            .map((d) => ({
              id: d.id!,
              type: 'function' as const,
              function: { name: d.function!.name!, arguments: d.function!.arguments! },
            }))
        : (await provider.complete(gemini3({}))).choices[0]!.message.tool_calls!;
      const signature = calls[0]!.id.split('~ts~')[1];
      expect(signature).toBeTruthy();
      expect(calls[1]!.id).toBe('call_1'); // only the first call of a step is signed
      const completion = await provider.complete(
        gemini3({
          messages: [
            { role: 'user', content: 'Weather in Lima and Quito?' },
            { role: 'assistant', content: null, tool_calls: calls },
            { role: 'tool', tool_call_id: calls[0]!.id, content: '{"celsius": 18}' },
            { role: 'tool', tool_call_id: calls[1]!.id, content: '{"celsius": 14}' },
          ],
        }),
      );
      expect(completion.choices[0]!.message.content).toBe(GEMINI_TEXT);
      expect(last().body.contents[1].parts).toEqual([
        { functionCall: { name: 'weather', args: { city: 'Lima' } }, thoughtSignature: signature },
        { functionCall: { name: 'weather', args: { city: 'Quito' } } },
      ]);
      expect(last().body.contents[2].parts.map((p: any) => p.functionResponse.name)).toEqual(['weather', 'weather']);
    }
  });

  it("a call Gemini did not make gets the documented sentinel (Gemini 3 only); a wrong signature is Google's 400", async () => {
    const history = (id: string) => [
      { role: 'user' as const, content: 'Weather?' },
      {
        role: 'assistant' as const,
        content: null,
        tool_calls: [{ id, type: 'function' as const, function: { name: 'weather', arguments: '{}' } }],
      },
      { role: 'tool' as const, tool_call_id: id, content: 'sunny' },
    ];
    await provider.complete(gemini3({ messages: history('call_from_elsewhere') }));
    expect(last().body.contents[1].parts[0].thoughtSignature).toBe('skip_thought_signature_validator');
    await provider.complete(call({ tools, messages: history('call_from_elsewhere') }));
    expect(last().body.contents[1].parts[0].thoughtSignature).toBeUndefined();
    const forged = await failure(provider.complete(gemini3({ messages: history('call_0~ts~Zm9yZ2Vk') })));
    expect(forged).toMatchObject({ status: 400 });
  });
});

describe('streams', () => {
  it('streamGenerateContent?alt=sse events arrive as chunks, then the usage chunk', async () => {
    const chunks = await collect(provider.stream(call({})));
    expect(last().path).toBe('/v1beta/models/gemini-test:streamGenerateContent?alt=sse');
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    expect(text(chunks)).toBe(GEMINI_TEXT);
    expect(finish(chunks)).toBe('stop');
    const end = chunks[chunks.length - 1]!;
    expect(end.choices).toEqual([]);
    expect(end.usage?.completion_tokens).toBe(8);
  });

  it('without usageMetadata there is no usage chunk (the gateway counts tokens then)', async () => {
    mock.enqueue({ kind: 'ok', usage: false });
    const chunks = await collect(provider.stream(call({})));
    expect(chunks.some((c) => c.usage)).toBe(false);
    expect(text(chunks)).toBe(GEMINI_TEXT);
  });

  it('function calls stream whole, with ids and finish_reason tool_calls; SAFETY mid-stream is content_filter', async () => {
    mock.enqueue({ kind: 'ok', calls: [{ name: 'weather', args: { city: 'Lima' } }] });
    const chunks = await collect(provider.stream(call({})));
    expect(chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? [])).toEqual([
      { index: 0, id: 'call_0', type: 'function', function: { name: 'weather', arguments: '{"city":"Lima"}' } },
    ]);
    expect(finish(chunks)).toBe('tool_calls');
    mock.enqueue({ kind: 'ok', finishReason: 'SAFETY' });
    expect(finish(await collect(provider.stream(call({}))))).toBe('content_filter');
  });

  it('a stream cut mid-way and a malformed event fail after the chunks already sent', async () => {
    for (const behavior of [
      { kind: 'cut', afterChunks: 3 },
      { kind: 'malformed', afterChunks: 3 },
    ] as const) {
      mock.enqueue(behavior);
      const chunks: UpstreamChunk[] = [];
      const error = await failure(
        (async () => {
          for await (const chunk of provider.stream(call({}))) chunks.push(chunk);
        })(),
      );
      expect(text(chunks)).toBe('part0 part1 part2 ');
      expect(error.kind).toBe('protocol');
    }
  });

  it("an error event mid-stream fails with Google's code and message", async () => {
    for (const status of [429, 500, 503]) {
      mock.enqueue({ kind: 'stream-error', afterChunks: 2, status, message: `stream says ${status}` });
      const chunks: UpstreamChunk[] = [];
      const error = await failure(
        (async () => {
          for await (const chunk of provider.stream(call({}))) chunks.push(chunk);
        })(),
      );
      expect(text(chunks)).toBe('part0 part1 ');
      expect(error).toMatchObject({ kind: 'http', status, message: `stream says ${status}` });
    }
  });

  it('chunks are yielded as the events arrive, not after the whole answer', async () => {
    mock.enqueue({ kind: 'ok', text: 'one two three four five six', delayMs: 100 });
    const started = Date.now();
    let firstText = 0;
    for await (const chunk of provider.stream(call({})))
      if (chunk.choices[0]?.delta.content && !firstText) firstText = Date.now() - started;
    expect(firstText).toBeLessThan(Date.now() - started - 300);
  });
});

describe('errors', () => {
  for (const status of [400, 403, 404, 429, 500, 503]) {
    it(`HTTP ${status} keeps its status and Google's message`, async () => {
      mock.enqueue({ kind: 'error', status, message: `mock says ${status}` });
      expect(await failure(provider.complete(call({})))).toMatchObject({
        kind: 'http',
        status,
        message: `mock says ${status}`,
      });
    });
  }

  it("Google's 400 API_KEY_INVALID is a 401; probes list models", async () => {
    const wrong = createGeminiProvider({ id: 'gemini', baseUrl: mock.url, apiKey: 'nope' });
    expect(await failure(wrong.complete(call({})))).toMatchObject({
      status: 401,
      message: expect.stringContaining('API key not valid'),
    });
    await wrong.close();
    await provider.probe!(AbortSignal.timeout(2_000));
    expect(last().path).toBe('/v1beta/models?pageSize=1');
  });
});
