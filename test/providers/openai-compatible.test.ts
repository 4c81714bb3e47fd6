import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  createOpenAICompatibleProvider,
  type OpenAICompatibleProvider,
} from '../../src/providers/openai-compatible/index.js';
import { parseStreamEvent } from '../../src/providers/openai-compatible/stream-event.js';
import { SseReader } from '../../src/providers/sse.js';
import { UpstreamError, type UpstreamChunk, type ChatRequest, type ProviderCall } from '../../src/providers/index.js';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.js';
import { collect, failure } from '../support/provider-calls.js';

const KEY = 'sk-test-123';
let mock: MockOpenAI;
let provider: OpenAICompatibleProvider;

const body = (extra: Partial<ChatRequest> = {}): ChatRequest => ({
  model: 'gpt-4o-mini',
  messages: [{ role: 'user', content: 'Hi' }],
  ...extra,
});

const call = (extra: Partial<ProviderCall> = {}): ProviderCall => ({
  body: body(),
  signal: new AbortController().signal,
  requestId: 'req_test',
  timeoutMs: 5_000,
  ...extra,
});

const content = (chunks: UpstreamChunk[]) => chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');

beforeAll(async () => {
  mock = await startMockOpenAI({ apiKey: KEY });
  provider = createOpenAICompatibleProvider({
    id: 'openai',
    baseUrl: `${mock.url}/`,
    apiKey: KEY,
    headers: { 'x-extra': 'yes' },
  });
});

afterAll(async () => {
  await provider.close();
  await mock.close();
});

beforeEach(() => {
  mock.setBehavior({ kind: 'ok' });
  mock.requests.length = 0;
});

describe('request shape', () => {
  it('posts the body unchanged to /chat/completions with auth and extra headers', async () => {
    const request = body({
      seed: 42,
      logprobs: true,
      top_logprobs: 2,
      tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA', detail: 'low' } },
          ],
        },
      ],
      stream_options: { include_usage: true },
    });
    await provider.complete(call({ body: request }));

    const [seen] = mock.requests;
    expect(seen?.path).toBe('/v1/chat/completions');
    expect(seen?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(seen?.headers['content-type']).toBe('application/json');
    expect(seen?.headers['x-extra']).toBe('yes');
    const { stream_options: _, ...rest } = request;
    expect(seen?.body).toEqual({ ...rest, stream: false });
  });

  it('asks for usage on streams and keeps the client stream_options', async () => {
    // A field the type does not know passes through too (a variable, not a literal, may carry more fields).
    const withExtra = { include_usage: false, extra: 1 };
    await collect(provider.stream(call({ body: body({ stream: true, stream_options: withExtra }) })));
    const [seen] = mock.requests;
    expect(seen?.headers.accept).toBe('text/event-stream');
    expect(seen?.body.stream).toBe(true);
    expect(seen?.body.stream_options).toEqual({ include_usage: true, extra: 1 });
  });

  it('sends no authorization header without an api key', async () => {
    const keyless = createOpenAICompatibleProvider({ id: 'ollama', baseUrl: mock.url });
    await failure(keyless.complete(call()));
    expect(mock.requests[0]?.headers.authorization).toBeUndefined();
    await keyless.close();
  });
});

describe('complete', () => {
  it('returns the completion as the upstream sent it', async () => {
    mock.setBehavior({ kind: 'ok', content: 'Hello there' });
    const completion = await provider.complete(call());
    expect(completion.object).toBe('chat.completion');
    expect(completion.model).toBe('gpt-4o-mini');
    expect(completion.choices[0]?.message.content).toBe('Hello there');
    expect(completion.choices[0]?.finish_reason).toBe('stop');
    expect(completion.usage?.completion_tokens).toBe(2);
    expect(completion.system_fingerprint).toBe('fp_mock');
  });

  it('returns tool calls', async () => {
    mock.setBehavior({ kind: 'ok', toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' }] });
    const completion = await provider.complete(call());
    expect(completion.choices[0]?.finish_reason).toBe('tool_calls');
    expect(completion.choices[0]?.message.tool_calls).toEqual([
      { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
    ]);
  });

  it('rejects a 200 body that is not JSON as a protocol error', async () => {
    mock.setBehavior({ kind: 'raw', body: '<html>hello</html>' });
    expect((await failure(provider.complete(call()))).kind).toBe('protocol');
  });
});

describe('stream', () => {
  it('yields chunks as they arrive, then the usage chunk', async () => {
    mock.setBehavior({ kind: 'ok', content: 'one two three four five', delayMs: 50, comment: true });
    const started = Date.now();
    let firstAt = 0;
    const chunks: UpstreamChunk[] = [];
    for await (const chunk of provider.stream(call({ body: body({ stream: true }) }))) {
      if (chunks.length === 0) firstAt = Date.now() - started;
      chunks.push(chunk);
    }
    const total = Date.now() - started;
    expect(firstAt).toBeLessThan(total - 150);
    expect(chunks[0]?.choices[0]?.delta.role).toBe('assistant');
    expect(content(chunks)).toBe('one two three four five');
    expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe('stop');
    const last = chunks.at(-1);
    expect(last?.choices).toEqual([]);
    expect(last?.usage).toMatchObject({ completion_tokens: 5 });
  });

  it('gives the connection back to the pool after [DONE]', async () => {
    const single = createOpenAICompatibleProvider({ id: 'openai', baseUrl: mock.url, apiKey: KEY, connections: 1 });
    await collect(single.stream(call({ body: body({ stream: true }) })));
    await new Promise((resolve) => setTimeout(resolve, 20));
    await collect(single.stream(call({ body: body({ stream: true }) })));
    expect(mock.requests[1]?.remotePort).toBe(mock.requests[0]?.remotePort);
    await single.close();
  });

  it('streams tool-call argument deltas', async () => {
    mock.setBehavior({
      kind: 'ok',
      chunks: 3,
      toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' }],
    });
    const chunks = await collect(provider.stream(call({ body: body({ stream: true }) })));
    const deltas = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    expect(deltas[0]).toMatchObject({ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather' } });
    expect(deltas.map((d) => d.function?.arguments ?? '').join('')).toBe('{"city":"Paris"}');
    expect(deltas.length).toBe(4);
    expect(chunks.some((c) => c.choices[0]?.finish_reason === 'tool_calls')).toBe(true);
  });

  it('accepts a stream ending without [DONE] after the finish chunk', async () => {
    const finish = {
      id: 'x',
      object: 'chat.completion.chunk',
      created: 1,
      model: 'm',
      choices: [{ index: 0, delta: {}, finish_reason: 'stop' }],
    };
    mock.setBehavior({
      kind: 'raw',
      headers: { 'content-type': 'text/event-stream' },
      body: `data: ${JSON.stringify(finish)}\n\n`,
    });
    expect(await collect(provider.stream(call({ body: body({ stream: true }) })))).toHaveLength(1);
  });

  it('treats a cut stream as a protocol error', async () => {
    mock.setBehavior({ kind: 'cut', afterChunks: 2 });
    const chunks: UpstreamChunk[] = [];
    const err = await failure(
      (async () => {
        for await (const chunk of provider.stream(call({ body: body({ stream: true }) }))) chunks.push(chunk);
      })(),
    );
    expect(err.kind).toBe('protocol');
    expect(chunks).toHaveLength(3);
  });

  it('treats a body ending without finish or [DONE] as a protocol error', async () => {
    mock.setBehavior({
      kind: 'raw',
      headers: { 'content-type': 'text/event-stream' },
      body: 'data: {"choices":[]}\n\n',
    });
    const err = await failure(collect(provider.stream(call({ body: body({ stream: true }) }))));
    expect(err.kind).toBe('protocol');
    expect(err.message).toMatch(/ended early/);
  });

  it('treats a malformed event as a protocol error', async () => {
    mock.setBehavior({ kind: 'malformed' });
    expect((await failure(collect(provider.stream(call({ body: body({ stream: true }) }))))).kind).toBe('protocol');
  });

  it('maps an error event to an http error', async () => {
    mock.setBehavior({ kind: 'stream-error', message: 'overloaded' });
    const err = await failure(collect(provider.stream(call({ body: body({ stream: true }) }))));
    expect(err).toMatchObject({ kind: 'http', status: 502, message: 'overloaded' });
  });

  it('stops promptly when aborted and rethrows the abort as-is', async () => {
    mock.setBehavior({ kind: 'ok', chunks: 50, delayMs: 50 });
    const controller = new AbortController();
    const chunks: UpstreamChunk[] = [];
    const started = Date.now();
    const err = await (async () => {
      for await (const chunk of provider.stream(call({ body: body({ stream: true }), signal: controller.signal }))) {
        chunks.push(chunk);
        if (chunks.length === 3) controller.abort();
      }
    })().catch((e: unknown) => e);
    expect(err).toBe(controller.signal.reason);
    expect(err).not.toBeInstanceOf(UpstreamError);
    expect(chunks).toHaveLength(3);
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('rethrows an abort that happens before the headers', async () => {
    mock.setBehavior({ kind: 'hang' });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const err = await provider.complete(call({ signal: controller.signal })).catch((e: unknown) => e);
    expect(err).toBe(controller.signal.reason);
  });
});

describe('upstream errors', () => {
  it('maps a 400 with its message and param', async () => {
    mock.setBehavior({
      kind: 'error',
      status: 400,
      message: "Invalid value for 'temperature'",
      param: 'temperature',
      code: 'invalid_value',
    });
    const err = await failure(provider.complete(call()));
    expect(err).toMatchObject({
      kind: 'http',
      status: 400,
      param: 'temperature',
      message: "Invalid value for 'temperature'",
      provider: 'openai',
    });
  });

  it('maps a 401 from a wrong key', async () => {
    const wrong = createOpenAICompatibleProvider({ id: 'openai', baseUrl: mock.url, apiKey: 'sk-wrong' });
    const err = await failure(wrong.complete(call()));
    expect(err).toMatchObject({ kind: 'http', status: 401 });
    expect(err.message).toMatch(/Incorrect API key/);
    await wrong.close();
  });

  it('maps 500 and 429 on streams too', async () => {
    mock.enqueue(
      { kind: 'error', status: 500, message: 'boom' },
      { kind: 'error', status: 429, message: 'slow down', retryAfter: 3 },
    );
    expect(await failure(collect(provider.stream(call({ body: body({ stream: true }) }))))).toMatchObject({
      status: 500,
      message: 'boom',
    });
    expect(await failure(provider.complete(call()))).toMatchObject({ kind: 'http', status: 429, message: 'slow down' });
  });

  it('uses the text of a non-JSON error body', async () => {
    mock.setBehavior({
      kind: 'raw',
      status: 503,
      headers: { 'content-type': 'text/plain' },
      body: 'upstream down' + 'x'.repeat(1000),
    });
    const err = await failure(provider.complete(call()));
    expect(err).toMatchObject({ kind: 'http', status: 503 });
    expect(err.message.startsWith('upstream down')).toBe(true);
    expect(err.message.length).toBe(500);
  });

  it('maps a refused connection', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise((resolve) => server.close(resolve));
    const closed = createOpenAICompatibleProvider({ id: 'vllm', baseUrl: `http://127.0.0.1:${port}/v1` });
    expect((await failure(closed.complete(call()))).kind).toBe('connection');
    await closed.close();
  });

  it('times out before the headers', async () => {
    mock.setBehavior({ kind: 'hang' });
    const started = Date.now();
    expect((await failure(provider.complete(call({ timeoutMs: 200 })))).kind).toBe('timeout');
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  // undici's header and body timers tick every ~500 ms, so the gap has to be well above that.
  it('times out on a gap in the stream', async () => {
    mock.setBehavior({ kind: 'ok', chunks: 3, delayMs: 2_000 });
    const chunks: UpstreamChunk[] = [];
    const err = await failure(
      (async () => {
        for await (const chunk of provider.stream(call({ body: body({ stream: true }), timeoutMs: 300 })))
          chunks.push(chunk);
      })(),
    );
    expect(err.kind).toBe('timeout');
    expect(chunks).toHaveLength(1);
  });
});

describe('sse helpers', () => {
  const bytes = (text: string) => new TextEncoder().encode(text);

  it('parses events split across chunks and drops comments', () => {
    const reader = new SseReader('p');
    const parts = [': keep-alive\n\nda', 'ta: {"a":1}\n', '\ndata: [DONE]\n\n'];
    const events = parts.flatMap((part) => reader.feed(bytes(part)).map((event) => event.data));
    expect(events).toEqual(['{"a":1}', '[DONE]']);
  });

  it('classifies events', () => {
    expect(parseStreamEvent('p', { data: '[DONE]' })).toBe('done');
    expect(parseStreamEvent('p', { data: '{"usage":{"prompt_tokens":1}}' })).toMatchObject({ choices: [] });
    expect(() => parseStreamEvent('p', { data: '{nope' })).toThrow(UpstreamError);
    const err = (() => {
      try {
        parseStreamEvent('p', { data: '{"error":{"message":"bad","code":400,"param":"n"}}' });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toMatchObject({ kind: 'http', status: 400, param: 'n', message: 'bad' });
  });
});
