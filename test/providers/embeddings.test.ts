/**
 * The adapters' `embed` against local servers following each provider's documented embeddings format: OpenAI's
 * `POST /embeddings` (what Mistral, Together, Ollama and vLLM also serve) and Gemini's `batchEmbedContents`.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createGeminiProvider, type GeminiProvider } from '../../src/providers/gemini/index.js';
import {
  createOpenAICompatibleProvider,
  type OpenAICompatibleProvider,
} from '../../src/providers/openai-compatible/index.js';
import { UpstreamError, type EmbeddingCall } from '../../src/providers/index.js';
import { startMockGemini, type MockGemini } from '../support/mock-gemini.js';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.js';

const call = (body: EmbeddingCall['body']): EmbeddingCall => ({
  body,
  signal: new AbortController().signal,
  requestId: 'req_embed',
  timeoutMs: 5_000,
});

describe('OpenAI-compatible embeddings', () => {
  let mock: MockOpenAI;
  let provider: OpenAICompatibleProvider;
  beforeAll(async () => {
    mock = await startMockOpenAI({ apiKey: 'sk-test' });
    provider = createOpenAICompatibleProvider({ id: 'openai', baseUrl: mock.url, apiKey: 'sk-test' });
  });
  afterAll(async () => {
    await provider.close();
    await mock.close();
  });
  beforeEach(() => mock.setBehavior({ kind: 'ok' }));

  it('asks for floats whatever the client asked, passes `dimensions`, and returns vectors and usage', async () => {
    const result = await provider.embed!(
      call({ model: 'text-embedding-3-small', input: ['one two', 'three'], dimensions: 8 }),
    );
    const sent = mock.requests.at(-1)!;
    expect(sent.path).toBe('/v1/embeddings');
    expect(sent.body).toMatchObject({ model: 'text-embedding-3-small', encoding_format: 'float', dimensions: 8 });
    expect(sent.headers.authorization).toBe('Bearer sk-test');
    expect(result.vectors).toHaveLength(2);
    expect(result.vectors[0]).toHaveLength(8);
    expect(result.promptTokens).toBe(3);
  });

  it("an upstream's 400 stays a 400 with its param; a 500 is an UpstreamError routing retries", async () => {
    mock.enqueue({ kind: 'error', status: 400, message: 'bad input', param: 'input' });
    const rejected = await provider.embed!(call({ model: 'm', input: 'x' })).catch((e: unknown) => e);
    expect(rejected).toBeInstanceOf(UpstreamError);
    expect((rejected as UpstreamError).status).toBe(400);
    expect((rejected as UpstreamError).param).toBe('input');
    mock.enqueue({ kind: 'error', status: 500 });
    const failed = await provider.embed!(call({ model: 'm', input: 'x' })).catch((e: unknown) => e);
    expect((failed as UpstreamError).status).toBe(500);
  });

  it('an answer that is not one vector per input, or not numbers, is a protocol error', async () => {
    for (const data of [
      [{ index: 0, embedding: [0.1] }],
      [
        { index: 0, embedding: [0.1] },
        { index: 1, embedding: ['x'] },
      ],
    ]) {
      mock.enqueue({ kind: 'raw', body: JSON.stringify({ object: 'list', data }) });
      const error = await provider.embed!(call({ model: 'm', input: ['a', 'b'] })).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UpstreamError);
      expect((error as UpstreamError).kind).toBe('protocol');
    }
  });

  it('vectors come back in input order when the upstream lists them out of order', async () => {
    const data = [
      { object: 'embedding', index: 1, embedding: [2] },
      { object: 'embedding', index: 0, embedding: [1] },
    ];
    mock.enqueue({ kind: 'raw', body: JSON.stringify({ object: 'list', data, usage: { prompt_tokens: 2 } }) });
    const result = await provider.embed!(call({ model: 'm', input: ['a', 'b'] }));
    expect(result.vectors).toEqual([[1], [2]]);
  });
});

describe('Gemini embeddings', () => {
  let mock: MockGemini;
  let provider: GeminiProvider;
  beforeAll(async () => {
    mock = await startMockGemini({ apiKey: 'g-key' });
    provider = createGeminiProvider({ id: 'gemini', baseUrl: mock.url, apiKey: 'g-key' });
  });
  afterAll(async () => {
    await provider.close();
    await mock.close();
  });

  it('one request per input with the model and outputDimensionality; vectors in order; no usage', async () => {
    const result = await provider.embed!(
      call({ model: 'gemini-embedding-001', input: ['alpha', 'beta'], dimensions: 16 }),
    );
    const sent = mock.requests.at(-1)!;
    expect(sent.path).toBe('/v1beta/models/gemini-embedding-001:batchEmbedContents');
    expect(sent.headers['x-goog-api-key']).toBe('g-key');
    expect(sent.body).toEqual({
      requests: [
        { model: 'models/gemini-embedding-001', content: { parts: [{ text: 'alpha' }] }, outputDimensionality: 16 },
        { model: 'models/gemini-embedding-001', content: { parts: [{ text: 'beta' }] }, outputDimensionality: 16 },
      ],
    });
    expect(result.vectors.map((v) => v.length)).toEqual([16, 16]);
    expect(result.vectors[0]).not.toEqual(result.vectors[1]);
    expect(result.promptTokens).toBeUndefined();
  });

  it('token arrays are refused with a 400 naming `input`, before anything is sent', async () => {
    const before = mock.requests.length;
    const error = await provider.embed!(call({ model: 'gemini-embedding-001', input: [1, 2, 3] })).catch(
      (e: unknown) => e,
    );
    expect((error as UpstreamError).status).toBe(400);
    expect((error as UpstreamError).param).toBe('input');
    expect(mock.requests.length).toBe(before);
  });
});
