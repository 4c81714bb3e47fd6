/**
 * The adapters' `completeText` and `streamText`: the OpenAI-compatible one against a local server following
 * OpenAI's documented `POST /completions` format (what vLLM, Ollama and Together serve), and the sandbox's.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  createOpenAICompatibleProvider,
  type OpenAICompatibleProvider,
} from '../../src/providers/openai-compatible/index.js';
import { createSandboxProvider } from '../../src/providers/sandbox/index.js';
import { UpstreamError, type UpstreamTextCompletion, type TextCompletionCall } from '../../src/providers/index.js';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.js';

const call = (body: TextCompletionCall['body'], signal = new AbortController().signal): TextCompletionCall => ({
  body,
  signal,
  requestId: 'req_text',
  timeoutMs: 5_000,
});

async function collect(chunks: AsyncIterable<UpstreamTextCompletion>): Promise<UpstreamTextCompletion[]> {
  const all: UpstreamTextCompletion[] = [];
  for await (const chunk of chunks) all.push(chunk);
  return all;
}

const textOf = (chunks: UpstreamTextCompletion[], index = 0) =>
  chunks
    .flatMap((chunk) => chunk.choices)
    .filter((choice) => choice.index === index)
    .map((choice) => choice.text)
    .join('');

describe('OpenAI-compatible text completions', () => {
  let mock: MockOpenAI;
  let provider: OpenAICompatibleProvider;
  beforeAll(async () => {
    mock = await startMockOpenAI({ apiKey: 'sk-test' });
    provider = createOpenAICompatibleProvider({ id: 'vllm', baseUrl: mock.url, apiKey: 'sk-test' });
  });
  afterAll(async () => {
    await provider.close();
    await mock.close();
  });
  beforeEach(() => mock.setBehavior({ kind: 'ok' }));

  it('passes the body through to POST /completions and returns the text_completion unchanged', async () => {
    const body = {
      model: 'Qwen/Qwen3-8B',
      prompt: 'def add(a, b):',
      suffix: '\n',
      max_tokens: 3,
      logit_bias: { 50256: -100 },
    };
    const answer = await provider.completeText!(call(body));
    const sent = mock.requests.at(-1)!;
    expect(sent.path).toBe('/v1/completions');
    expect(sent.headers.authorization).toBe('Bearer sk-test');
    expect(sent.body).toMatchObject({ ...body, stream: false });
    expect(sent.body.stream_options).toBeUndefined();
    expect(answer).toMatchObject({
      object: 'text_completion',
      model: 'Qwen/Qwen3-8B',
      choices: [{ index: 0, text: 'Hello from the', finish_reason: 'length', logprobs: null }],
      usage: { prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 },
    });
  });

  it('streams asking for usage whatever the client asked, and yields every chunk up to [DONE]', async () => {
    const chunks = await collect(
      provider.streamText!(call({ model: 'm', prompt: ['a b', 'c'], n: 2, max_tokens: 2, stream: true })),
    );
    expect(mock.requests.at(-1)!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    for (const index of [0, 1, 2, 3]) expect(textOf(chunks, index)).toBe('Hello from');
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 8 } });
    expect(chunks.filter((c) => c.choices.some((choice) => choice.finish_reason === 'length'))).toHaveLength(4);
  });

  it("an upstream's 400 keeps its status and param; a 503 is an UpstreamError routing retries", async () => {
    mock.enqueue({ kind: 'error', status: 400, message: "'best_of' must be at most 20", param: 'best_of' });
    const rejected = await provider.completeText!(call({ model: 'm', prompt: 'x' })).catch((e: unknown) => e);
    expect(rejected).toBeInstanceOf(UpstreamError);
    expect((rejected as UpstreamError).status).toBe(400);
    expect((rejected as UpstreamError).param).toBe('best_of');
    mock.enqueue({ kind: 'error', status: 503 });
    const failed = await provider.completeText!(call({ model: 'm', prompt: 'x' })).catch((e: unknown) => e);
    expect((failed as UpstreamError).status).toBe(503);
  });

  it('an answer without text choices is a protocol error; so is a stream cut before its end', async () => {
    mock.enqueue({ kind: 'raw', body: JSON.stringify({ object: 'chat.completion', choices: [{ message: {} }] }) });
    const wrong = await provider.completeText!(call({ model: 'm', prompt: 'x' })).catch((e: unknown) => e);
    expect((wrong as UpstreamError).kind).toBe('protocol');
    mock.enqueue({ kind: 'cut', afterChunks: 1 });
    const cut = await collect(provider.streamText!(call({ model: 'm', prompt: 'x', stream: true }))).catch(
      (e: unknown) => e,
    );
    expect((cut as UpstreamError).kind).toBe('protocol');
  });

  it('an error event mid-stream is an UpstreamError after the chunks before it', async () => {
    mock.enqueue({ kind: 'stream-error', afterChunks: 2, message: 'engine died' });
    const seen: string[] = [];
    const error = await (async () => {
      for await (const chunk of provider.streamText!(call({ model: 'm', prompt: 'x', stream: true })))
        seen.push(...chunk.choices.map((c) => c.text));
    })().catch((e: unknown) => e);
    expect(seen.join('')).toBe('Hello from');
    expect(error).toBeInstanceOf(UpstreamError);
    expect((error as UpstreamError).message).toContain('engine died');
  });
});

describe('sandbox text completions', () => {
  const sandbox = createSandboxProvider();

  it('echo continues with the prompt, cut at max_tokens (16 by default) and at a stop sequence', async () => {
    const long =
      'one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen';
    const cut = await sandbox.completeText!(call({ model: 'echo', prompt: long }));
    expect(cut.choices[0]).toMatchObject({ finish_reason: 'length' });
    expect(cut.usage).toMatchObject({ completion_tokens: 16 });
    const stopped = await sandbox.completeText!(call({ model: 'echo', prompt: 'red, green', stop: [','] }));
    expect(stopped.choices[0]).toMatchObject({ text: 'red', finish_reason: 'stop' });
  });

  it('lorem is deterministic per prompt and seed, and differs between choices', async () => {
    const body = { model: 'lorem', prompt: 'tell me', n: 2, max_tokens: 50, seed: 1 };
    const first = await sandbox.completeText!(call(body));
    const again = await sandbox.completeText!(call(body));
    expect(again.choices.map((c) => c.text)).toEqual(first.choices.map((c) => c.text));
    expect(first.choices[0]!.text).not.toBe(first.choices[1]!.text);
    const other = await sandbox.completeText!(call({ ...body, seed: 2 }));
    expect(other.choices[0]!.text).not.toBe(first.choices[0]!.text);
  });

  it('token-array prompts count as their length; the suffix counts as prompt for every prompt', async () => {
    const answer = await sandbox.completeText!(
      call({ model: 'echo', prompt: [[9906, 1917], [9906]], suffix: ' end', max_tokens: 4 }),
    );
    expect(answer.choices).toHaveLength(2);
    expect(answer.usage!.prompt_tokens).toBe(2 + 1 + 2 * 1);
  });

  it('streams the same text as its JSON answer, then a usage chunk; stops when the call is aborted', async () => {
    const body = { model: 'lorem', prompt: 'abc', max_tokens: 30, echo: true };
    const whole = await sandbox.completeText!(call(body));
    const chunks = await collect(sandbox.streamText!(call({ ...body, stream: true })));
    expect(textOf(chunks)).toBe(whole.choices[0]!.text);
    expect(whole.choices[0]!.text.startsWith('abc')).toBe(true);
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: whole.usage });
    const controller = new AbortController();
    const partial: UpstreamTextCompletion[] = [];
    for await (const chunk of sandbox.streamText!(call({ ...body, stream: true }, controller.signal))) {
      partial.push(chunk);
      if (partial.length === 2) controller.abort();
    }
    expect(partial).toHaveLength(2);
  });

  it('n above the sandbox bound is a 400 naming `n`', async () => {
    const error = await sandbox.completeText!(call({ model: 'echo', prompt: 'x', n: 9 })).catch((e: unknown) => e);
    expect((error as UpstreamError).status).toBe(400);
    expect((error as UpstreamError).param).toBe('n');
  });
});
