/**
 * POST /v1/completions end to end with live keys, served by a local server speaking OpenAI's documented
 * `/completions` format (what vLLM, Ollama and Together serve): the body passed through natively with the
 * upstream model name, JSON and streams metered at the upstream's usage, upstream errors in the contract's
 * envelope, a bound lowered to what the balance pays, fallback `models` and `timeout_ms`, and the money invariants
 * under 100 concurrent requests.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultConfig } from '../../src/config/index.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { auditLedger } from '../support/ledger-audit.js';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.js';

const nano = (usd: number) => Math.round(usd * 1e9);
/** qwen-text's price in nano-USD per token. */
const PROMPT_NANO = 1_000;
const COMPLETION_NANO = 2_000;
/** qwen-backup's, on another server. */
const BACKUP_PROMPT_NANO = 500;
const BACKUP_COMPLETION_NANO = 1_000;
const TEXT = {
  chat: true,
  completion: true,
  function_calling: false,
  vision: false,
  embeddings: false,
  json_mode: false,
};

let gateway: TestGateway;
let vllm: MockOpenAI;
let backup: MockOpenAI;

beforeAll(async () => {
  vllm = await startMockOpenAI();
  backup = await startMockOpenAI();
  const defaults = defaultConfig();
  const model = {
    pricing: { prompt: 0.001, completion: 0.002 },
    context_length: 32_768,
    max_tokens: 8_192,
    capabilities: TEXT,
    created: 0,
  };
  gateway = await startGateway({
    dialect: 'postgres',
    env: { VLLM_BASE_URL: vllm.url },
    overrides: {
      routing: { ...defaults.routing, backoff_ms: 5, retries: 0, breaker_failures: 1_000 },
      providers: { backup: { base_url: backup.url } },
      models: [
        { id: 'qwen-text', provider: 'vllm', upstream_model: 'Qwen/Qwen3-8B', ...model },
        {
          id: 'qwen-backup',
          provider: 'backup',
          upstream_model: 'Qwen/Qwen3-4B',
          ...model,
          pricing: { prompt: 0.0005, completion: 0.001 },
        },
        {
          id: 'qwen-dear',
          provider: 'backup',
          upstream_model: 'Qwen/Qwen3-32B',
          ...model,
          pricing: { prompt: 0.01, completion: 0.02 },
        },
      ],
    },
  });
});
afterAll(async () => {
  await gateway?.close();
  await vllm?.close();
  await backup?.close();
});

function post(key: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(`${gateway.baseURL}/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

async function complete(key: string, body: unknown) {
  const response = await post(key, body);
  return { status: response.status, headers: response.headers, body: (await response.json()) as any };
}

/** A streamed answer's `data:` events, parsed (`[DONE]` kept as the string). */
async function events(response: Response): Promise<any[]> {
  const text = await response.text();
  return text
    .split('\n\n')
    .filter((event) => event.startsWith('data: '))
    .map((event) => (event === 'data: [DONE]' ? '[DONE]' : JSON.parse(event.slice(6))));
}

async function balance(accountId: string): Promise<number> {
  const { body } = await gateway.admin('GET', `/admin/accounts/${accountId}`);
  return nano(body.balance.credits);
}

describe('text completions through an OpenAI-compatible server', () => {
  it('passes the prompt through with the upstream model name and max_tokens 16 by default; billed at its usage', async () => {
    const account = await gateway.account();
    const before = await balance(account.id);
    const { status, headers, body } = await complete(account.key, {
      model: 'qwen-text',
      prompt: 'The capital of France is',
      suffix: '.',
      temperature: 0,
    });
    expect(status).toBe(200);
    expect(headers.get('x-tollgate-provider')).toBe('vllm');
    expect(vllm.requests.at(-1)!).toMatchObject({
      path: '/v1/completions',
      body: { model: 'Qwen/Qwen3-8B', prompt: 'The capital of France is', suffix: '.', max_tokens: 16, stream: false },
    });
    expect(body).toMatchObject({
      object: 'text_completion',
      model: 'qwen-text',
      choices: [{ index: 0, text: 'Hello from the mock upstream.', finish_reason: 'stop', logprobs: null }],
    });
    // The mock counts words: 5 prompt and 5 completion tokens.
    expect(body.usage).toMatchObject({ prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 });
    const cost = 5 * PROMPT_NANO + 5 * COMPLETION_NANO;
    expect(nano(body.usage.cost)).toBe(cost);
    expect(before - (await balance(account.id))).toBe(cost);
  });

  it('streams text_completion chunks metered at the upstream usage, settled before [DONE]', async () => {
    const account = await gateway.account();
    const before = await balance(account.id);
    const response = await post(account.key, {
      model: 'qwen-text',
      prompt: ['one two', 'three'],
      n: 2,
      max_tokens: 3,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    expect(response.headers.get('x-tollgate-provider')).toBe('vllm');
    expect(response.headers.get('x-request-id')).toBeTruthy();
    const all = await events(response);
    expect(all.at(-1)).toBe('[DONE]');
    const chunks = all.slice(0, -1);
    for (const chunk of chunks) expect(chunk).toMatchObject({ object: 'text_completion', model: 'qwen-text' });
    const text = (index: number) =>
      chunks
        .flatMap((chunk) => chunk.choices)
        .filter((choice: any) => choice.index === index)
        .map((choice: any) => choice.text)
        .join('');
    expect([0, 1, 2, 3].map(text)).toEqual(Array(4).fill('Hello from the'));
    const usage = chunks.at(-1).usage;
    expect(usage).toMatchObject({ prompt_tokens: 3, completion_tokens: 12, total_tokens: 15 });
    const cost = 3 * PROMPT_NANO + 12 * COMPLETION_NANO;
    expect(nano(usage.cost)).toBe(cost);
    expect(before - (await balance(account.id))).toBe(cost);
  });

  it('a stream without include_usage shows no usage but is billed at the upstream usage it asked for', async () => {
    const account = await gateway.account();
    const before = await balance(account.id);
    const all = await events(await post(account.key, { model: 'qwen-text', prompt: 'hi', stream: true }));
    expect(vllm.requests.at(-1)!.body.stream_options).toEqual({ include_usage: true });
    expect(all.at(-1)).toBe('[DONE]');
    for (const chunk of all.slice(0, -1)) expect(chunk.usage).toBeUndefined();
    expect(before - (await balance(account.id))).toBe(1 * PROMPT_NANO + 5 * COMPLETION_NANO);
  });

  it("upstream errors are the contract's envelope and charge nothing: a refusal 400 with its param, a failure 502", async () => {
    const account = await gateway.account();
    const before = await balance(account.id);
    vllm.enqueue({ kind: 'error', status: 400, message: "'suffix' is not supported by this model", param: 'suffix' });
    const refused = await complete(account.key, { model: 'qwen-text', prompt: 'x', suffix: 'y' });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({
      code: 'invalid_request',
      type: 'invalid_request_error',
      param: 'suffix',
    });
    vllm.enqueue({ kind: 'error', status: 503, message: 'engine overloaded' });
    const failed = await complete(account.key, { model: 'qwen-text', prompt: 'x' });
    expect(failed.status).toBe(502);
    expect(failed.body.error.code).toBe('upstream_error');
    expect(await balance(account.id)).toBe(before);
  });

  it('an error mid-stream is one error event without [DONE], and what was delivered is charged', async () => {
    const account = await gateway.account();
    const before = await balance(account.id);
    vllm.enqueue({ kind: 'stream-error', afterChunks: 2, message: 'engine died' });
    const all = await events(await post(account.key, { model: 'qwen-text', prompt: 'hi', stream: true }));
    expect(all).not.toContain('[DONE]');
    expect(all.at(-1).error.code).toBe('upstream_error');
    expect(
      all
        .slice(0, -1)
        .map((chunk) => chunk.choices[0].text)
        .join(''),
    ).toBe('Hello from');
    // "hi" is one token by tollgate's count, "Hello from" two.
    expect(before - (await balance(account.id))).toBe(1 * PROMPT_NANO + 2 * COMPLETION_NANO);
  });

  it('a client that goes away mid-stream is charged what was delivered, and the upstream call is closed', async () => {
    const account = await gateway.account();
    const before = await balance(account.id);
    vllm.enqueue({ kind: 'ok', content: 'word '.repeat(50).trim(), delayMs: 20 });
    const controller = new AbortController();
    const response = await fetch(`${gateway.baseURL}/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${account.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'qwen-text', prompt: 'hi', max_tokens: 100, stream: true }),
      signal: controller.signal,
    });
    const reader = response.body!.getReader();
    let received = '';
    while ((received.match(/data: /g) ?? []).length < 3)
      received += new TextDecoder().decode((await reader.read()).value);
    controller.abort();
    const upstream = vllm.requests.at(-1)!;
    let spent = 0;
    for (let i = 0; i < 100 && (spent === 0 || upstream.closedAt === undefined); i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      spent = before - (await balance(account.id));
    }
    expect(upstream.completed).toBe(false);
    const completionTokens = (spent - 1 * PROMPT_NANO) / COMPLETION_NANO;
    expect(Number.isInteger(completionTokens)).toBe(true);
    expect(completionTokens).toBeGreaterThanOrEqual(3);
    expect(completionTokens).toBeLessThan(50);
  });

  it('a chat-only model is a 400 that says where the models with text completions are listed', async () => {
    const account = await gateway.account();
    const chatOnly = await complete(account.key, { model: 'gpt-6-luna', prompt: 'x' });
    expect(chatOnly.status).toBe(400);
    expect(chatOnly.body.error).toMatchObject({ code: 'invalid_request', param: 'model' });
    expect(chatOnly.body.error.message).toContain('capability=completion');
  });

  it('`models`: a fallback answers when the model fails, is named and billed at its price; neither field goes upstream', async () => {
    const account = await gateway.account();
    const before = await balance(account.id);
    vllm.enqueue({ kind: 'error', status: 500, message: 'engine crashed' });
    const request: OpenAI.CompletionCreateParamsNonStreaming & { models: string[]; timeout_ms: number } = {
      model: 'qwen-text',
      prompt: 'The capital of France is',
      models: ['qwen-backup'],
      timeout_ms: 5_000,
    };
    const { data, response } = await gateway.client(account.key).completions.create(request).withResponse();
    expect(response.headers.get('x-tollgate-provider')).toBe('backup');
    expect(data.model).toBe('qwen-backup');
    expect(data.choices[0]!.text).toBe('Hello from the mock upstream.');
    const cost = 5 * BACKUP_PROMPT_NANO + 5 * BACKUP_COMPLETION_NANO;
    expect(nano((data.usage as OpenAI.CompletionUsage & { cost: number }).cost)).toBe(cost);
    expect(before - (await balance(account.id))).toBe(cost);
    const { body: ledger } = await gateway.admin('GET', `/admin/accounts/${account.id}/ledger?limit=5`);
    expect(ledger.data.filter((entry: any) => entry.kind === 'debit')).toMatchObject([{ model: 'qwen-backup' }]);
    for (const sent of [vllm.requests.at(-1)!, backup.requests.at(-1)!]) {
      expect(sent.path).toBe('/v1/completions');
      expect(sent.body).not.toHaveProperty('models');
      expect(sent.body).not.toHaveProperty('timeout_ms');
    }
    expect(backup.requests.at(-1)!.body.model).toBe('Qwen/Qwen3-4B');
  });

  it('a streamed request falls back the same way', async () => {
    const account = await gateway.account();
    vllm.enqueue({ kind: 'error', status: 503, message: 'overloaded' });
    const response = await post(account.key, {
      model: 'qwen-text',
      prompt: 'hi',
      stream: true,
      stream_options: { include_usage: true },
      models: ['qwen-backup'],
    });
    expect(response.headers.get('x-tollgate-provider')).toBe('backup');
    const all = await events(response);
    expect(all.at(-1)).toBe('[DONE]');
    expect(all.at(-2).model).toBe('qwen-backup');
    expect(backup.requests.at(-1)!.body).not.toHaveProperty('models');
  });

  it('`timeout_ms`: an upstream that does not start answering in time is a 504 after about that long, charged nothing', async () => {
    const account = await gateway.account();
    const before = await balance(account.id);
    vllm.enqueue({ kind: 'hang' });
    const started = Date.now();
    const { status, body } = await complete(account.key, { model: 'qwen-text', prompt: 'x', timeout_ms: 300 });
    const elapsed = Date.now() - started;
    expect([status, body.error.code]).toEqual([504, 'upstream_timeout']);
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(1_500);
    expect(vllm.requests.at(-1)!.body).not.toHaveProperty('timeout_ms');
    expect(await balance(account.id)).toBe(before);
  });

  it('each fallback must exist (404), be allowed to the key (403) and serve text completions (400); nothing is sent', async () => {
    const account = await gateway.account();
    const limited = await gateway.key(account.id, { permissions: 'project', models: ['qwen-text'] });
    const sent = vllm.requests.length + backup.requests.length;
    const error = async (key: string, body: Record<string, unknown>) => {
      const { status, body: answer } = await complete(key, { model: 'qwen-text', prompt: 'x', ...body });
      return { status, ...answer.error };
    };
    expect(await error(account.key, { models: ['no-such-model'] })).toMatchObject({
      status: 404,
      code: 'model_not_found',
      param: 'models',
      message: "The model 'no-such-model' does not exist",
    });
    expect(await error(limited.key, { models: ['qwen-backup'] })).toMatchObject({
      status: 403,
      code: 'permission_denied',
    });
    expect(await error(account.key, { models: ['qwen-backup', 'gpt-6-luna'] })).toMatchObject({
      status: 400,
      code: 'invalid_request',
      param: 'models',
      message:
        "The model 'gpt-6-luna' does not serve text completions; list those that do with GET /v1/models?capability=completion",
    });
    expect(await error(account.key, { timeout_ms: 0 })).toMatchObject({ status: 400, param: 'timeout_ms' });
    expect(await error(account.key, { models: Array(9).fill('qwen-backup') })).toMatchObject({
      status: 400,
      param: 'models',
    });
    expect(vllm.requests.length + backup.requests.length).toBe(sent);
  });

  it("the hold is the dearest candidate's: a fallback dearer than the model lowers the bound the balance pays", async () => {
    const account = await gateway.account();
    const request = { model: 'qwen-text', prompt: 'The capital of France is', max_tokens: 100 };
    // 0.0005 USD pays 100 tokens of qwen-text (205,000 nano-USD held), not of qwen-dear (2,050,000).
    await gateway.setBalance(account.id, 0.0005);
    const alone = await post(account.key, request);
    expect(alone.status).toBe(200);
    expect(alone.headers.get('x-tollgate-max-tokens-lowered')).toBeNull();
    expect(vllm.requests.at(-1)!.body.max_tokens).toBe(100);
    await gateway.setBalance(account.id, 0.0005);
    const withDear = await post(account.key, { ...request, models: ['qwen-dear'] });
    expect(withDear.status).toBe(200);
    expect(withDear.headers.get('x-tollgate-provider')).toBe('vllm');
    // (500,000 - 5 prompt tokens at 10,000) / 20,000 per completion token.
    expect(withDear.headers.get('x-tollgate-max-tokens-lowered')).toBe('22');
    expect(vllm.requests.at(-1)!.body.max_tokens).toBe(22);
  });

  it('a balance that pays fewer tokens than max_tokens lowers the bound sent upstream, and says so', async () => {
    const account = await gateway.account();
    await gateway.setBalance(account.id, 0.00003);
    const response = await post(account.key, {
      model: 'qwen-text',
      prompt: 'The capital of France is',
      max_tokens: 100,
    });
    expect(response.status).toBe(200);
    const lowered = Number(response.headers.get('x-tollgate-max-tokens-lowered'));
    expect(lowered).toBeGreaterThan(0);
    expect(lowered).toBeLessThan(100);
    expect(vllm.requests.at(-1)!.body.max_tokens).toBe(lowered);
    expect(await balance(account.id)).toBeGreaterThanOrEqual(0);
  });

  it('an Idempotency-Key retry of a stream replays it without a second charge', async () => {
    const account = await gateway.account();
    const request = () =>
      post(
        account.key,
        { model: 'qwen-text', prompt: 'replay me', stream: true, stream_options: { include_usage: true } },
        { 'idempotency-key': 'cmpl-replay-1' },
      );
    const first = await events(await request());
    const before = await balance(account.id);
    const again = await request();
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await events(again)).toEqual(first);
    expect(await balance(account.id)).toBe(before);
  });

  it('a test key is answered by the sandbox at cost 0, the upstream never called', async () => {
    const account = await gateway.account();
    const test = await gateway.key(account.id, { environment: 'test' });
    const sent = vllm.requests.length;
    const { status, headers, body } = await complete(test.key, {
      model: 'qwen-text',
      prompt: 'echo this',
      max_tokens: 5,
    });
    expect(status).toBe(200);
    expect(headers.get('x-tollgate-provider')).toBe('sandbox');
    expect(body.choices[0].text).toBe('echo this');
    expect(body.usage.cost).toBe(0);
    expect(vllm.requests.length).toBe(sent);
  });

  it('GET /v1/openapi.json documents the request, the answer and the stream chunks as they are', async () => {
    const doc = (await (await fetch(`${gateway.url}/v1/openapi.json`)).json()) as any;
    const ajv = new Ajv2020({ strict: false, validateFormats: false });
    ajv.addSchema(doc, 'openapi.json');
    const matches = (name: string, value: unknown) => ajv.getSchema(`openapi.json#/components/schemas/${name}`)!(value);
    expect(doc.paths['/v1/completions'].post).toBeDefined();
    const account = await gateway.account();
    const request = { model: 'qwen-text', prompt: ['a', 'b'], n: 2, logit_bias: { '42': -100 } };
    expect(matches('CompletionRequest', request)).toBe(true);
    expect(matches('CompletionRequest', { ...request, logprobs: 6 })).toBe(false);
    const { body } = await complete(account.key, request);
    expect(matches('Completion', body)).toBe(true);
    const all = await events(
      await post(account.key, { ...request, stream: true, stream_options: { include_usage: true } }),
    );
    for (const chunk of all.slice(0, -1)) expect(matches('CompletionChunk', chunk)).toBe(true);
  });

  it('100 concurrent mixed requests at an account that pays for about 20: balance = ledger sum, never below 0', async () => {
    const account = await gateway.account({ plan: 'pay_as_you_go' });
    // Each asks 40 tokens of a 30-word answer: about 63 microdollars charged (and 83 held) a request.
    const startNano = 20 * 63_000;
    await gateway.setBalance(account.id, startNano / 1e9);
    vllm.setBehavior({ kind: 'ok', content: 'word '.repeat(30).trim(), delayMs: 1 });
    let outcomes: Array<{ status: number; costNano: number; code?: string }>;
    try {
      outcomes = await Promise.all(
        Array.from({ length: 100 }, async (_, i) => {
          const stream = i % 2 === 0;
          const response = await post(account.key, {
            model: 'qwen-text',
            prompt: `request number ${i}`,
            max_tokens: 40,
            ...(stream ? { stream, stream_options: { include_usage: true } } : {}),
          });
          if (!stream || response.status !== 200) {
            const body = (await response.json()) as any;
            return {
              status: response.status,
              costNano: body.usage ? nano(body.usage.cost) : 0,
              code: body.error?.code,
            };
          }
          const all = await events(response);
          expect(all.at(-1)).toBe('[DONE]');
          return { status: 200, costNano: nano(all.at(-2).usage.cost) };
        }),
      );
    } finally {
      vllm.setBehavior({ kind: 'ok' });
    }
    const ok = outcomes.filter((o) => o.status === 200);
    const refused = outcomes.filter((o) => o.status !== 200);
    expect(ok.length).toBeGreaterThan(5);
    expect(refused.length).toBeGreaterThan(5);
    for (const r of refused) expect([r.status, r.code]).toEqual([402, 'insufficient_credits']);

    const balanceNano = await balance(account.id);
    expect(balanceNano).toBeGreaterThanOrEqual(0);
    const ledger = await gateway.admin('GET', `/admin/accounts/${account.id}/ledger?limit=500`);
    const entries = ledger.body.data as Array<{ kind: string; amount: number }>;
    const debits = entries.filter((e) => e.kind === 'debit');
    expect(debits).toHaveLength(ok.length);
    const debited = -debits.reduce((sum, e) => sum + nano(e.amount), 0);
    expect(ok.reduce((sum, o) => sum + o.costNano, 0)).toBe(debited);
    expect(startNano - balanceNano).toBe(debited);
    const audit = await auditLedger(gateway.database);
    expect(audit.problems).toEqual([]);
  });
});
