/** POST /v1/embeddings on fake dependencies: the vectors, their encoding, and the bill. */
import { describe, expect, it } from 'vitest';
import { createEmbeddings, type RequestInput } from '../../src/gateway/index.js';
import { UpstreamError, type UpstreamEmbeddings } from '../../src/providers/index.js';
import { countTextTokens } from '../../src/tokens/index.js';
import { fakeDeps, type Setup, inputOf, refusal } from './fakes.js';

const EMBED = 'text-embedding-3-small';

const input = (body: Record<string, unknown> = {}, extra: Partial<RequestInput> = {}) =>
  inputOf({ model: EMBED, input: ['first text', 'second text'] }, body, extra);

function embedder(answer: UpstreamEmbeddings | Error, setup: Omit<Setup, 'provider'> = {}) {
  return fakeDeps({
    provider: { embed: () => (answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer)) },
    ...setup,
  });
}

/** What OpenAI's base64 holds: the float32 values, little-endian. */
function float32s(base64: string): number[] {
  const bytes = Buffer.from(base64, 'base64');
  return Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4));
}

describe('an embeddings answer', () => {
  it('lists the vectors in the order of the inputs, with the usage billed and its cost', async () => {
    const fake = embedder({
      vectors: [
        [0.1, 0.2, 0.3],
        [0.4, 0.5, 0.6],
      ],
      promptTokens: 7,
    });
    const { headers, body } = await createEmbeddings(input({ models: [EMBED], timeout_ms: 10_000 }), fake.deps);
    expect(fake.calls).toMatchObject([
      { method: 'embed', body: { model: 'upstream-name', input: ['first text', 'second text'] } },
    ]);
    expect(fake.calls[0]!.body).not.toHaveProperty('models');
    expect(fake.calls[0]!.body).not.toHaveProperty('timeout_ms');
    expect(body).toEqual({
      object: 'list',
      data: [
        { object: 'embedding', index: 0, embedding: [0.1, 0.2, 0.3] },
        { object: 'embedding', index: 1, embedding: [0.4, 0.5, 0.6] },
      ],
      model: EMBED,
      usage: { prompt_tokens: 7, total_tokens: 7, cost: 0.0015 },
    });
    expect(fake.settled).toMatchObject([{ promptTokens: 7, completionTokens: 0, model: EMBED }]);
    expect(headers['x-tollgate-provider']).toBe('openai');
    expect(fake.wallet.reserve).toHaveBeenCalledWith(expect.objectContaining({ requestedMaxTokens: 0 }));
  });

  it("encoding_format 'base64' gives the float32 little-endian bytes, and is not sent upstream", async () => {
    const vector = [1.5, -2.25, 0.125, 1e-3];
    const fake = embedder({ vectors: [vector], promptTokens: 2 });
    const { body } = await createEmbeddings(input({ input: 'one', encoding_format: 'base64' }), fake.deps);
    expect(fake.calls[0]!.body).not.toHaveProperty('encoding_format');
    const encoded = body.data[0]!.embedding;
    expect(typeof encoded).toBe('string');
    const decoded = float32s(encoded as string);
    expect(decoded).toHaveLength(4);
    decoded.forEach((value, i) => expect(value).toBeCloseTo(vector[i]!, 6));
    expect(encoded).toBe(Buffer.from(new Float32Array(vector).buffer).toString('base64'));
  });

  it("an upstream without a token count is billed at tollgate's count of the inputs", async () => {
    const fake = embedder({ vectors: [[0.1], [0.2]], promptTokens: undefined });
    const { body } = await createEmbeddings(input(), fake.deps);
    const counted = countTextTokens('first text') + countTextTokens('second text');
    expect(fake.settled).toMatchObject([{ promptTokens: counted, completionTokens: 0 }]);
    expect(body.usage).toMatchObject({ prompt_tokens: counted, total_tokens: counted });
  });

  it("an upstream's count that is not a whole number is ignored for tollgate's", async () => {
    const fake = embedder({ vectors: [[0.1]], promptTokens: -3 });
    await createEmbeddings(input({ input: 'first text' }), fake.deps);
    expect(fake.settled).toMatchObject([{ promptTokens: countTextTokens('first text') }]);
  });
});

describe('an embeddings request refused', () => {
  it('a model that does not embed is 400 naming model, before anything is held', async () => {
    const fake = embedder({ vectors: [[0.1]], promptTokens: 1 });
    const error = await refusal(createEmbeddings(input({ model: 'gpt-6-luna' }), fake.deps));
    expect([error.status, error.code, error.param]).toEqual([400, 'invalid_request', 'model']);
    expect(error.message).toContain('does not create embeddings');
    expect(fake.wallet.reserve).not.toHaveBeenCalled();
    expect(fake.calls).toEqual([]);
  });

  it('a deployment whose provider has no embed is 400, never asked, and the hold is released', async () => {
    const fake = fakeDeps();
    const error = await refusal(createEmbeddings(input(), fake.deps));
    expect([error.status, error.param]).toEqual([400, 'model']);
    expect(fake.calls).toEqual([]);
    expect(fake.reservation.release).toHaveBeenCalledTimes(1);
    expect(fake.settled).toEqual([]);
  });

  it('an upstream failure is 502: the hold released, nothing settled', async () => {
    const fake = embedder(new UpstreamError('openai', 'http', 'down', { status: 500 }));
    const error = await refusal(createEmbeddings(input(), fake.deps));
    expect(error.status).toBe(502);
    expect(fake.reservation.release).toHaveBeenCalledTimes(1);
    expect(fake.settled).toEqual([]);
  });

  it('a keyless request is 401 before anything is routed', async () => {
    const fake = embedder({ vectors: [[0.1]], promptTokens: 1 });
    const error = await refusal(createEmbeddings(input({}, { authorization: undefined }), fake.deps));
    expect(error.status).toBe(401);
    expect(fake.router.route).not.toHaveBeenCalled();
  });
});
