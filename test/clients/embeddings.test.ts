/**
 * Embeddings through the clients RAG pipelines use, pointed at a running gateway with only the base URL and key
 * changed: the official `openai` package (its default base64 encoding and floats), LangChain's OpenAIEmbeddings
 * and the Vercel AI SDK's embedMany. Each request is billed at its input tokens, exactly.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { OpenAIEmbeddings } from '@langchain/openai';
import { embedMany } from 'ai';
import OpenAI, { BadRequestError, PermissionDeniedError } from 'openai';
import { describe, expect, it } from 'vitest';
import { brokeKey, clientGatewayPerFile, credits, nano, type ClientGateway } from './support.js';

const EMBED = 'sandbox/embed';

let gateway: ClientGateway;
let account: { id: string; key: string };

clientGatewayPerFile((started, created) => {
  gateway = started;
  account = created;
});

function client(apiKey: string): OpenAI {
  return new OpenAI({ baseURL: gateway.baseURL, apiKey, maxRetries: 0 });
}

type UsageWithCost = OpenAI.CreateEmbeddingResponse.Usage & { cost: number };

const norm = (vector: number[]) => Math.sqrt(vector.reduce((sum, v) => sum + v * v, 0));

describe('embeddings', () => {
  it('openai SDK, its default encoding (base64): one unit vector per input, billed at the input tokens', async () => {
    const before = await credits(gateway, account.key);
    const texts = ['The quick brown fox', 'jumps over the lazy dog', 'The quick brown fox'];
    const response = await client(account.key).embeddings.create({ model: EMBED, input: texts });
    expect(response.object).toBe('list');
    expect(response.model).toBe(EMBED);
    expect(response.data.map((item) => item.index)).toEqual([0, 1, 2]);
    for (const item of response.data) {
      expect(item.embedding).toHaveLength(256);
      expect(norm(item.embedding)).toBeCloseTo(1, 4);
    }
    // The same text, the same vector; another text, another.
    expect(response.data[2]!.embedding).toEqual(response.data[0]!.embedding);
    expect(response.data[1]!.embedding).not.toEqual(response.data[0]!.embedding);
    const usage = response.usage as UsageWithCost;
    expect(usage.prompt_tokens).toBeGreaterThanOrEqual(10);
    expect(usage.total_tokens).toBe(usage.prompt_tokens);
    // 0.00002 USD per 1,000 input tokens.
    expect(nano(usage.cost)).toBe(usage.prompt_tokens * 20);
    const after = await credits(gateway, account.key);
    expect(nano(before) - nano(after)).toBe(nano(usage.cost));
  });

  it('floats when asked, and `dimensions` sets the length', async () => {
    const openai = client(account.key);
    const floats = await openai.embeddings.create({
      model: EMBED,
      input: 'hello',
      encoding_format: 'float',
      dimensions: 64,
    });
    const base64 = await openai.embeddings.create({ model: EMBED, input: 'hello', dimensions: 64 });
    expect(floats.data[0]!.embedding).toHaveLength(64);
    // base64 carries float32: the same vector to float32 precision.
    const a = floats.data[0]!.embedding;
    const b = base64.data[0]!.embedding;
    expect(b).toHaveLength(64);
    a.forEach((value, i) => expect(b[i]).toBeCloseTo(value, 6));
  });

  it('token arrays are embedded too, and counted as their length', async () => {
    const response = await client(account.key).embeddings.create({
      model: EMBED,
      input: [
        [1, 2, 3],
        [4, 5, 6, 7],
      ],
    });
    expect(response.data).toHaveLength(2);
    expect(response.usage.prompt_tokens).toBe(7);
  });

  it('a chat model is refused with 400 naming `model`, and an empty input with 400 naming `input`', async () => {
    const openai = client(account.key);
    const chatModel = await openai.embeddings.create({ model: 'sandbox/echo', input: 'x' }).catch((e: unknown) => e);
    expect(chatModel).toBeInstanceOf(BadRequestError);
    expect((chatModel as BadRequestError).param).toBe('model');
    const empty = await openai.embeddings.create({ model: EMBED, input: [] }).catch((e: unknown) => e);
    expect(empty).toBeInstanceOf(BadRequestError);
    expect((empty as BadRequestError).param).toBe('input');
  });

  it('an account that cannot pay gets 402 and is not charged', async () => {
    const key = await brokeKey(gateway);
    const response = await fetch(`${gateway.baseURL}/embeddings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: EMBED, input: 'hello' }),
    });
    expect(response.status).toBe(402);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('insufficient_credits');
  });

  it('a key limited to other models is refused (403) before anything is charged', async () => {
    const { id } = account;
    const created = await gateway.admin('POST', `/admin/accounts/${id}/keys`, {
      permissions: 'project',
      models: ['sandbox/echo'],
    });
    const limited = (created.body as { key: string }).key;
    const refused = await client(limited)
      .embeddings.create({ model: EMBED, input: 'hello' })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(PermissionDeniedError);
  });

  it('LangChain OpenAIEmbeddings: documents and a query', async () => {
    const embeddings = new OpenAIEmbeddings({
      model: EMBED,
      apiKey: account.key,
      configuration: { baseURL: gateway.baseURL },
      maxRetries: 0,
    });
    const documents = await embeddings.embedDocuments(['first document', 'second document']);
    const query = await embeddings.embedQuery('first document');
    expect(documents).toHaveLength(2);
    expect(documents[0]).toHaveLength(256);
    query.forEach((value, i) => expect(documents[0]![i]).toBeCloseTo(value, 6));
  });

  it('Vercel AI SDK embedMany: vectors and usage', async () => {
    const tollgate = createOpenAICompatible({ name: 'tollgate', baseURL: gateway.baseURL, apiKey: account.key });
    const { embeddings, usage } = await embedMany({
      model: tollgate.textEmbeddingModel(EMBED),
      values: ['sunny day at the beach', 'rainy night in the city'],
      maxRetries: 0,
    });
    expect(embeddings).toHaveLength(2);
    expect(embeddings[0]).toHaveLength(256);
    expect(usage.tokens).toBeGreaterThan(0);
  });
});
