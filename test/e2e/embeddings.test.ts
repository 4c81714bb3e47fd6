/**
 * POST /v1/embeddings end to end with live keys and the default catalog's embedding models, served by local
 * servers speaking OpenAI's and Gemini's embeddings formats: billed at the upstream's count (OpenAI) or the
 * gateway's (Gemini reports none), failed over to the next deployment, listed by `capability=embedding`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultConfig } from '../../src/config/index.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { startMockGemini, type MockGemini } from '../support/mock-gemini.js';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.js';

const nano = (usd: number) => Math.round(usd * 1e9);

let gateway: TestGateway;
let openai: MockOpenAI;
let backup: MockOpenAI;
let gemini: MockGemini;

beforeAll(async () => {
  openai = await startMockOpenAI({ apiKey: 'sk-e2e' });
  backup = await startMockOpenAI();
  gemini = await startMockGemini({ apiKey: 'gm-e2e' });
  const defaults = defaultConfig();
  gateway = await startGateway({
    env: {
      OPENAI_API_KEY: 'sk-e2e',
      OPENAI_BASE_URL: openai.url,
      GEMINI_API_KEY: 'gm-e2e',
      GEMINI_BASE_URL: gemini.url,
    },
    overrides: {
      routing: { ...defaults.routing, backoff_ms: 5, retries: 0, breaker_failures: 1_000 },
      providers: { backup: { base_url: backup.url } },
      models: [
        {
          id: 'embed-with-backup',
          provider: 'openai',
          upstream_model: 'text-embedding-3-small',
          pricing: { prompt: 0.0001, completion: 0 },
          context_length: 8_191,
          max_tokens: 0,
          capabilities: {
            chat: false,
            completion: false,
            function_calling: false,
            vision: false,
            embeddings: true,
            json_mode: false,
          },
          created: 0,
          deployments: [
            { provider: 'openai', upstream_model: 'text-embedding-3-small' },
            { provider: 'backup', upstream_model: 'bge-local' },
          ],
        },
      ],
    },
  });
});
afterAll(async () => {
  await gateway?.close();
  await Promise.all([openai?.close(), backup?.close(), gemini?.close()]);
});

async function embed(key: string, body: unknown) {
  const response = await fetch(`${gateway.baseURL}/embeddings`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as any };
}

async function balance(accountId: string): Promise<number> {
  const { body } = await gateway.admin('GET', `/admin/accounts/${accountId}`);
  return nano(body.balance.credits);
}

describe('embeddings through the providers', () => {
  it("OpenAI: the upstream model name goes upstream, floats come back, billed at the upstream's token count", async () => {
    const account = await gateway.account();
    const before = await balance(account.id);
    const { status, headers, body } = await embed(account.key, {
      model: 'text-embedding-3-small',
      input: ['one two three', 'four five'],
      dimensions: 4,
    });
    expect(status).toBe(200);
    expect(headers.get('x-tollgate-provider')).toBe('openai');
    expect(openai.requests.at(-1)!.body).toMatchObject({ model: 'text-embedding-3-small', dimensions: 4 });
    expect(body.data.map((d: any) => d.embedding.length)).toEqual([4, 4]);
    // The mock counts words: 5 tokens at 0.00002 USD per 1,000.
    expect(body.usage.prompt_tokens).toBe(5);
    expect(nano(body.usage.cost)).toBe(5 * 20);
    expect(before - (await balance(account.id))).toBe(5 * 20);
    const { body: ledger } = await gateway.admin('GET', `/admin/accounts/${account.id}/ledger?limit=5`);
    expect(ledger.data[0]).toMatchObject({ kind: 'debit', model: 'text-embedding-3-small' });
  });

  it('Gemini: batchEmbedContents, billed at the gateway count since Gemini reports none', async () => {
    const account = await gateway.account();
    const { status, body } = await embed(account.key, {
      model: 'gemini-embedding-001',
      input: 'a sentence to embed',
      encoding_format: 'base64',
    });
    expect(status).toBe(200);
    expect(gemini.requests.at(-1)!.path).toBe('/v1beta/models/gemini-embedding-001:batchEmbedContents');
    expect(typeof body.data[0].embedding).toBe('string');
    expect(Buffer.from(body.data[0].embedding, 'base64').length).toBe(3072 * 4);
    expect(body.usage.prompt_tokens).toBe(4);
    expect(nano(body.usage.cost)).toBe(4 * 150);
  });

  it('a failing deployment falls over to the next, which is named and billed', async () => {
    const account = await gateway.account();
    openai.enqueue({ kind: 'error', status: 503, message: 'overloaded' });
    const { status, headers, body } = await embed(account.key, { model: 'embed-with-backup', input: 'hello there' });
    expect(status).toBe(200);
    expect(headers.get('x-tollgate-provider')).toBe('backup');
    expect(backup.requests.at(-1)!.body).toMatchObject({ model: 'bge-local', encoding_format: 'float' });
    expect(body.model).toBe('embed-with-backup');
    expect(nano(body.usage.cost)).toBe(2 * 100);
  });

  it("an upstream's refusal is the client's 400 and charges nothing", async () => {
    const account = await gateway.account();
    const before = await balance(account.id);
    openai.enqueue({
      kind: 'error',
      status: 400,
      message: 'This model does not support dimensions',
      param: 'dimensions',
    });
    const { status, body } = await embed(account.key, { model: 'text-embedding-3-small', input: 'x', dimensions: 3 });
    expect(status).toBe(400);
    expect(body.error.param).toBe('dimensions');
    expect(await balance(account.id)).toBe(before);
  });

  it('an input longer than the model takes is refused before anything is sent', async () => {
    const account = await gateway.account();
    const sent = openai.requests.length;
    const { status, body } = await embed(account.key, {
      model: 'text-embedding-3-small',
      input: ['short', 'word '.repeat(9_000)],
    });
    expect(status).toBe(400);
    expect(body.error).toMatchObject({ code: 'context_length_exceeded', param: 'input' });
    expect(openai.requests.length).toBe(sent);
  });

  it('an Idempotency-Key retry gets the first answer without a second charge', async () => {
    const account = await gateway.account();
    const request = (input: string) =>
      fetch(`${gateway.baseURL}/embeddings`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${account.key}`,
          'content-type': 'application/json',
          'idempotency-key': 'emb-1',
        },
        body: JSON.stringify({ model: 'text-embedding-3-small', input }),
      });
    const first = await request('same input');
    const before = await balance(account.id);
    const again = await request('same input');
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.json()).toEqual(await first.json());
    expect(await balance(account.id)).toBe(before);
    expect((await request('other input')).status).toBe(422);
  });

  it('GET /v1/models?capability=embedding lists the embedding models and only them', async () => {
    const response = await fetch(`${gateway.baseURL}/models?capability=embedding&include_capabilities=true`, {
      headers: { authorization: `Bearer ${gateway.firstKey}` },
    });
    const { data } = (await response.json()) as { data: Array<{ id: string; capabilities: { embeddings: boolean } }> };
    const ids = data.map((m) => m.id);
    for (const id of ['sandbox/embed', 'text-embedding-3-small', 'text-embedding-3-large', 'gemini-embedding-001'])
      expect(ids).toContain(id);
    expect(ids).not.toContain('sandbox/echo');
    expect(data.every((m) => m.capabilities.embeddings)).toBe(true);
  });

  it('a test key is answered by the sandbox at cost 0', async () => {
    const account = await gateway.account();
    const test = await gateway.key(account.id, { environment: 'test' });
    const sent = openai.requests.length;
    const { status, headers, body } = await embed(test.key, { model: 'text-embedding-3-small', input: 'hello' });
    expect(status).toBe(200);
    expect(headers.get('x-tollgate-provider')).toBe('sandbox');
    expect(body.usage.cost).toBe(0);
    expect(openai.requests.length).toBe(sent);
  });
});
