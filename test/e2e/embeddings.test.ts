/**
 * POST /v1/embeddings end to end with live keys and the default catalog's embedding models, served by local
 * servers speaking OpenAI's and Gemini's embeddings formats: billed at the upstream's count (OpenAI) or the
 * gateway's (Gemini reports none), failed over to the next deployment or to the request's fallback `models`,
 * bounded by `timeout_ms`, listed by `capability=embedding`.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultConfig } from '../../src/config/index.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { startMockGemini, type MockGemini } from '../support/mock-gemini.js';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.js';

const nano = (usd: number) => Math.round(usd * 1e9);

/** An embedding model on the `backup` server at 300 nano-USD per token. */
const EMBEDDING_MODEL = {
  pricing: { prompt: 0.0003, completion: 0 },
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
};

let gateway: TestGateway;
let openai: MockOpenAI;
let backup: MockOpenAI;
let gemini: MockGemini;
/** A server that takes requests and never answers them. */
let silent: Server;

beforeAll(async () => {
  openai = await startMockOpenAI({ apiKey: 'sk-e2e' });
  backup = await startMockOpenAI();
  gemini = await startMockGemini({ apiKey: 'gm-e2e' });
  silent = createServer(() => {});
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const silentUrl = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/v1`;
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
      providers: { backup: { base_url: backup.url }, silent: { base_url: silentUrl } },
      models: [
        { ...EMBEDDING_MODEL, id: 'embed-on-backup', provider: 'backup', upstream_model: 'bge-small' },
        { ...EMBEDDING_MODEL, id: 'embed-silent', provider: 'silent', upstream_model: 'bge-small' },
        {
          ...EMBEDDING_MODEL,
          id: 'embed-dear',
          provider: 'backup',
          upstream_model: 'bge-large',
          pricing: { prompt: 0.1, completion: 0 },
        },
        {
          id: 'embed-with-backup',
          provider: 'openai',
          upstream_model: 'text-embedding-3-small',
          ...EMBEDDING_MODEL,
          pricing: { prompt: 0.0001, completion: 0 },
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
  if (silent) {
    silent.closeAllConnections();
    await new Promise((resolve) => silent.close(resolve));
  }
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

  it('`models`: a fallback model answers when the model fails, named and billed at its price; neither field goes upstream', async () => {
    const account = await gateway.account();
    const before = await balance(account.id);
    openai.enqueue({ kind: 'error', status: 500, message: 'overloaded' });
    const { status, headers, body } = await embed(account.key, {
      model: 'text-embedding-3-small',
      input: 'hello there',
      models: ['embed-on-backup'],
      timeout_ms: 5_000,
    });
    expect(status).toBe(200);
    expect(headers.get('x-tollgate-provider')).toBe('backup');
    expect(body.model).toBe('embed-on-backup');
    // The mock counts words: 2 tokens at embed-on-backup's 300 nano-USD.
    expect(nano(body.usage.cost)).toBe(2 * 300);
    expect(before - (await balance(account.id))).toBe(2 * 300);
    const { body: ledger } = await gateway.admin('GET', `/admin/accounts/${account.id}/ledger?limit=5`);
    expect(ledger.data.filter((entry: any) => entry.kind === 'debit')).toMatchObject([{ model: 'embed-on-backup' }]);
    expect(backup.requests.at(-1)!.body).toMatchObject({ model: 'bge-small', input: 'hello there' });
    for (const sent of [openai.requests.at(-1)!, backup.requests.at(-1)!]) {
      expect(sent.path).toBe('/v1/embeddings');
      expect(sent.body).not.toHaveProperty('models');
      expect(sent.body).not.toHaveProperty('timeout_ms');
    }
  });

  it('`timeout_ms`: an upstream that does not answer in time is a 504 after about that long, charged nothing', async () => {
    const account = await gateway.account();
    const before = await balance(account.id);
    const started = Date.now();
    const { status, body } = await embed(account.key, { model: 'embed-silent', input: 'x', timeout_ms: 300 });
    const elapsed = Date.now() - started;
    expect([status, body.error.code]).toEqual([504, 'upstream_timeout']);
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(1_500);
    expect(await balance(account.id)).toBe(before);
  });

  it('each fallback must exist (404), be allowed to the key (403) and create embeddings (400); nothing is sent', async () => {
    const account = await gateway.account();
    const limited = await gateway.key(account.id, { permissions: 'project', models: ['text-embedding-3-small'] });
    const sent = openai.requests.length + backup.requests.length;
    const error = async (key: string, body: Record<string, unknown>) => {
      const { status, body: answer } = await embed(key, { model: 'text-embedding-3-small', input: 'x', ...body });
      return { status, ...answer.error };
    };
    expect(await error(account.key, { models: ['no-such-model'] })).toMatchObject({
      status: 404,
      code: 'model_not_found',
      param: 'models',
      message: "The model 'no-such-model' does not exist",
    });
    expect(await error(limited.key, { models: ['embed-on-backup'] })).toMatchObject({
      status: 403,
      code: 'permission_denied',
    });
    expect(await error(account.key, { models: ['embed-on-backup', 'sandbox/echo'] })).toMatchObject({
      status: 400,
      code: 'invalid_request',
      param: 'models',
      message:
        "The model 'sandbox/echo' does not create embeddings; list those that do with GET /v1/models?capability=embedding",
    });
    expect(await error(account.key, { timeout_ms: 600_001 })).toMatchObject({ status: 400, param: 'timeout_ms' });
    expect(openai.requests.length + backup.requests.length).toBe(sent);
  });

  it("the hold is the dearest candidate's: a balance that pays the model's input but not a fallback's is 402", async () => {
    const account = await gateway.account();
    // 'hello there' is 2 tokens: 40 nano-USD at text-embedding-3-small's price, 200,000 at embed-dear's.
    await gateway.setBalance(account.id, 0.0001);
    const request = { model: 'text-embedding-3-small', input: 'hello there' };
    const dear = await embed(account.key, { ...request, models: ['embed-dear'] });
    expect([dear.status, dear.body.error?.code]).toEqual([402, 'insufficient_credits']);
    const alone = await embed(account.key, request);
    expect(alone.status).toBe(200);
    expect(alone.headers.get('x-tollgate-provider')).toBe('openai');
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
