/**
 * End to end: tollgate in front of a local server speaking OpenAI's wire format. The client side is the official
 * `openai` SDK (raw fetch where bodies and headers matter); the upstream side is the mock's recorded requests.
 */
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { APIError } from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { defaultConfig, type Config, type ModelConfig } from '../../src/config/index.js';
import { DEFAULT_MODELS } from '../../src/config/default-catalog.js';
import { countPromptTokens, countTextTokens } from '../../src/tokens/index.js';
import { startGateway, ADMIN_TOKEN, type TestGateway } from '../support/gateway.js';
import { startMockOpenAI, type MockOpenAI, type RecordedRequest } from '../support/mock-openai.js';

const UPSTREAM_KEY = 'sk-upstream-test';
/** An extra OpenAI model with a versioned id, an alias and its own upstream name, to test resolution by alias. */
const ALIASED: ModelConfig = {
  ...DEFAULT_MODELS.find((m) => m.provider === 'openai')!,
  id: 'gpt-6-luna-2026-09-22',
  aliases: ['gpt-6-luna-snapshot'],
  upstream_model: 'gpt-6-luna-upstream-2026-09-22',
  name: 'GPT-6 Luna (snapshot)',
};

interface CatalogEntry {
  id: string;
  aliases?: string[];
  provider: { id: string };
  pricing: {
    prompt: number;
    completion: number;
    input_cache_read?: number;
    input_cache_write?: number;
    input_cache_write_1h?: number;
  };
}

let mock: MockOpenAI;
let gw: TestGateway;
/** The default catalog's OpenAI model under test, as GET /v1/models shows it. */
let model: CatalogEntry;
let upstreamName: string;

// ---------------------------------------------------------------------------------------------------------------
// Helpers

const nano = (usd: number): bigint => BigInt(Math.round(usd * 1e9));
/** Catalog price per 1k tokens in nano-USD. */
const per1k = (usd: number): bigint => BigInt(Math.round(usd * 1e9));

/**
 * The price a prompt token is held at: the dearest it may be billed at (OpenAI bills a cache write above plain
 * input), as the contract's hold covers the most the provider could bill.
 */
function heldPromptPer1k(entry: Pick<CatalogEntry, 'pricing'>): bigint {
  const { prompt, input_cache_read, input_cache_write, input_cache_write_1h } = entry.pricing;
  const prices = [prompt, input_cache_read, input_cache_write, input_cache_write_1h].filter((p) => p !== undefined);
  return prices.map(per1k).reduce((a, b) => (b > a ? b : a));
}

/** What admission holds for a prompt and completion bound, rounded up to 1e-9 USD. */
function holdNano(entry: Pick<CatalogEntry, 'pricing'>, promptTokens: number, completionTokens: number): bigint {
  const scaled =
    BigInt(promptTokens) * heldPromptPer1k(entry) + BigInt(completionTokens) * per1k(entry.pricing.completion);
  return (scaled + 999n) / 1000n;
}

/** Exact cost: prompt*price/1000 + completion*price/1000, rounded up to 1e-9 USD. */
function costNano(entry: Pick<CatalogEntry, 'pricing'>, promptTokens: number, completionTokens: number): bigint {
  const scaled =
    BigInt(promptTokens) * per1k(entry.pricing.prompt) + BigInt(completionTokens) * per1k(entry.pricing.completion);
  return (scaled + 999n) / 1000n;
}

/** The prompt tokens the mock reports for a request it received. */
const mockPromptTokens = (seen: RecordedRequest) => Math.ceil(JSON.stringify(seen.body.messages ?? []).length / 4);

async function balance(key: string, base = gw): Promise<bigint> {
  const res = await fetch(`${base.baseURL}/credits`, { headers: { authorization: `Bearer ${key}` } });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { balance: { credits: number } };
  return nano(body.balance.credits);
}

async function reservationsOpen(base = gw): Promise<number> {
  const res = await fetch(`${base.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  expect(res.status).toBe(200);
  const match = /^tollgate_reservations_open(?:\{[^}]*\})? (\S+)$/m.exec(await res.text());
  expect(match).not.toBeNull();
  return Number(match![1]);
}

async function ledgerSum(accountId: string, base = gw): Promise<{ balance: bigint; sum: bigint; entries: any[] }> {
  const account = await base.admin('GET', `/admin/accounts/${accountId}`);
  expect(account.status).toBe(200);
  const ledger = await base.admin('GET', `/admin/accounts/${accountId}/ledger?limit=500`);
  expect(ledger.status).toBe(200);
  const entries = ledger.body.data as Array<{ amount: number }>;
  return {
    balance: nano(account.body.balance.credits),
    sum: entries.reduce((s, e) => s + nano(e.amount), 0n),
    entries,
  };
}

function chat(key: string, body: unknown, base = gw): Promise<Response> {
  return fetch(`${base.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

/** The `data:` payloads of an SSE text, in order. */
function sseData(text: string): string[] {
  return text
    .split(/\n\n/)
    .flatMap((event) => event.split('\n').filter((line) => line.startsWith('data:')))
    .map((line) => line.slice(5).trim());
}

async function until(condition: () => boolean | Promise<boolean>, timeoutMs = 3_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(20);
  }
}

async function apiError(promise: Promise<unknown>): Promise<APIError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(APIError);
  return error as APIError;
}

const lastRequest = () => mock.requests[mock.requests.length - 1]!;
const userMessage = (text = 'Say hello.') => [{ role: 'user' as const, content: text }];

// ---------------------------------------------------------------------------------------------------------------

beforeAll(async () => {
  mock = await startMockOpenAI({ apiKey: UPSTREAM_KEY });
  gw = await startGateway({
    env: { OPENAI_API_KEY: UPSTREAM_KEY, OPENAI_BASE_URL: mock.url },
    overrides: { models: [ALIASED] },
  });
  const res = await fetch(`${gw.baseURL}/models`, { headers: { authorization: `Bearer ${gw.firstKey}` } });
  expect(res.status).toBe(200);
  const models = ((await res.json()) as { data: Array<CatalogEntry & { status: { active: boolean } }> }).data;
  const defaultOpenAI = new Set(DEFAULT_MODELS.filter((m) => m.provider === 'openai').map((m) => m.id));
  const openai = models.filter((m) => m.provider.id === 'openai' && defaultOpenAI.has(m.id));
  expect(openai.length).toBeGreaterThan(0);
  expect(openai.every((m) => m.status.active)).toBe(true);
  model = openai.find((m) => m.aliases?.length) ?? openai[0]!;
  const config = DEFAULT_MODELS.find((m) => m.id === model.id)!;
  upstreamName = config.upstream_model ?? config.id;
});

afterAll(async () => {
  await gw?.close();
  await mock?.close();
});

beforeEach(() => {
  mock.setBehavior({ kind: 'ok' });
});

describe('what the upstream receives', () => {
  it('the path, the upstream key, the upstream model name and every parameter unchanged', async () => {
    const { key } = await gw.account();
    const sent = {
      model: model.aliases?.[0] ?? model.id,
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'developer', content: 'Answer in English.', name: 'dev' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in this picture?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUg==', detail: 'low' } },
          ],
        },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{"q":"cat"}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '{"answer":"a cat"}' },
      ],
      temperature: 0.3,
      top_p: 0.9,
      n: 1,
      stop: ['END', 'STOP'],
      max_tokens: 300,
      seed: 7,
      user: 'end-user-42',
      logprobs: true,
      top_logprobs: 3,
      presence_penalty: 0.5,
      frequency_penalty: -0.25,
      logit_bias: { '50256': -100 },
      parallel_tool_calls: false,
      tools: [
        {
          type: 'function',
          function: {
            name: 'lookup',
            description: 'Looks a thing up',
            parameters: { type: 'object', properties: { q: { type: 'string' } } },
            strict: true,
          },
        },
      ],
      tool_choice: { type: 'function', function: { name: 'lookup' } },
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'answer', schema: { type: 'object' }, strict: true },
      },
      x_unknown_extra: { nested: [1, 'two', { three: 3 }] },
    };
    const before = mock.requests.length;
    const res = await chat(key, sent);
    expect(res.status).toBe(200);
    expect(mock.requests.length).toBe(before + 1);
    const seen = lastRequest();
    expect(seen.method).toBe('POST');
    expect(seen.path).toBe('/v1/chat/completions');
    expect(seen.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
    expect(JSON.stringify(seen.headers)).not.toContain(key);
    expect(JSON.stringify(seen.body)).not.toContain(key);
    expect(seen.body.model).toBe(upstreamName);
    const { model: _model, ...params } = sent;
    for (const [name, value] of Object.entries(params)) expect(seen.body[name], name).toEqual(value);
    // Nothing else was added but the explicit non-stream flag.
    expect(Object.keys(seen.body).sort()).toEqual(
      [...Object.keys(sent), ...(seen.body.stream === undefined ? [] : ['stream'])].sort(),
    );
    expect(seen.body.stream ?? false).toBe(false);
  });

  it('max_completion_tokens passes through, and a stream request asks for usage', async () => {
    const { key } = await gw.account();
    let res = await chat(key, { model: model.id, messages: userMessage(), max_completion_tokens: 77 });
    expect(res.status).toBe(200);
    expect(lastRequest().body.max_completion_tokens).toBe(77);
    expect(lastRequest().body.max_tokens).toBeUndefined();

    res = await chat(key, { model: model.id, messages: userMessage(), stream: true });
    expect(res.status).toBe(200);
    await res.text();
    expect(lastRequest().body.stream).toBe(true);
    expect(lastRequest().body.stream_options?.include_usage).toBe(true);
    expect(lastRequest().headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`);
    expect(lastRequest().body.model).toBe(upstreamName);
  });
});

describe('what the client gets', () => {
  it('the catalog id, the exact cost, the provider header, and a balance lowered by exactly the cost', async () => {
    const { key } = await gw.account();
    const client = gw.client(key);
    const start = await balance(key);
    mock.enqueue({ kind: 'ok', content: 'one two three four five six seven' });
    const { data, response } = await client.chat.completions
      .create({ model: model.aliases?.[0] ?? model.id, messages: userMessage('Count to seven.'), max_tokens: 50 })
      .withResponse();
    const seen = lastRequest();
    expect(data.model).toBe(model.id);
    expect(data.choices[0]?.message.content).toBe('one two three four five six seven');
    expect(response.headers.get('x-tollgate-provider')).toBe('openai');
    expect(response.headers.get('x-request-id')).toBeTruthy();
    const usage = data.usage as unknown as {
      prompt_tokens: number;
      completion_tokens: number;
      total_tokens: number;
      cost: number;
    };
    expect(usage.prompt_tokens).toBe(mockPromptTokens(seen));
    expect(usage.completion_tokens).toBe(7);
    expect(usage.total_tokens).toBe(usage.prompt_tokens + 7);
    const expected = costNano(model, usage.prompt_tokens, 7);
    expect(expected).toBeGreaterThan(0n);
    expect(nano(usage.cost)).toBe(expected);
    expect(start - (await balance(key))).toBe(expected);
  });

  it('a model asked by its alias answers with its versioned id and reaches the upstream by its upstream name', async () => {
    const { key } = await gw.account();
    const { data } = await gw
      .client(key)
      .chat.completions.create({ model: ALIASED.aliases![0]!, messages: userMessage() })
      .withResponse();
    expect(data.model).toBe(ALIASED.id);
    expect(lastRequest().body.model).toBe(ALIASED.upstream_model);
    const usage = data.usage as unknown as { prompt_tokens: number; completion_tokens: number; cost: number };
    expect(nano(usage.cost)).toBe(costNano({ pricing: ALIASED.pricing }, usage.prompt_tokens, usage.completion_tokens));
  });
});

describe('streaming through the SDK', () => {
  it('chunks arrive incrementally, concatenate to the text, and the final chunk carries usage.cost', async () => {
    const { key } = await gw.account();
    const start = await balance(key);
    mock.enqueue({ kind: 'ok', chunks: 10, delayMs: 30 });
    const text = Array.from({ length: 10 }, (_, i) => `token${i} `).join('');
    const stream = await gw.client(key).chat.completions.create({
      model: model.aliases?.[0] ?? model.id,
      messages: userMessage('Stream ten tokens.'),
      stream: true,
      stream_options: { include_usage: true },
    });
    const arrivals: number[] = [];
    let content = '';
    let usage: any;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      expect(chunk.model).toBe(model.id);
      const delta = chunk.choices[0]?.delta.content;
      if (delta) {
        arrivals.push(performance.now());
        content += delta;
      }
      if (chunk.usage) {
        expect(usage).toBeUndefined();
        usage = chunk.usage;
        expect(chunk.choices).toEqual([]);
      }
    }
    expect(content).toBe(text);
    expect(arrivals.length).toBe(10);
    // 9 gaps of 30 ms upstream: buffered delivery would put them all within a few ms of each other.
    expect(arrivals[arrivals.length - 1]! - arrivals[0]!).toBeGreaterThan(150);
    const seen = lastRequest();
    expect(seen.body.stream_options?.include_usage).toBe(true);
    expect(usage).toBeDefined();
    expect(usage.prompt_tokens).toBe(mockPromptTokens(seen));
    expect(usage.completion_tokens).toBe(10);
    const expected = costNano(model, usage.prompt_tokens, 10);
    expect(nano(usage.cost)).toBe(expected);
    expect(start - (await balance(key))).toBe(expected);
    expect(chunks).toBeGreaterThan(10);
  });

  it('without include_usage no chunk carries usage (but the account is still charged)', async () => {
    const { key } = await gw.account();
    const start = await balance(key);
    mock.enqueue({ kind: 'ok', chunks: 4 });
    const stream = await gw
      .client(key)
      .chat.completions.create({ model: model.id, messages: userMessage(), stream: true });
    let content = '';
    for await (const chunk of stream) {
      // Not even `usage: null`: the client did not ask for usage, so the field is absent as on OpenAI itself.
      expect(chunk).not.toHaveProperty('usage');
      content += chunk.choices[0]?.delta.content ?? '';
    }
    expect(content).toBe('token0 token1 token2 token3 ');
    // Upstream still reported usage (the gateway asks for it): the charge is exact.
    const seen = lastRequest();
    expect(start - (await balance(key))).toBe(costNano(model, mockPromptTokens(seen), 4));
  });

  it('tool-call deltas pass through', async () => {
    const { key } = await gw.account();
    const args = '{"city":"Paris","unit":"celsius"}';
    mock.enqueue({ kind: 'ok', toolCalls: [{ id: 'call_abc', name: 'get_weather', arguments: args }], chunks: 4 });
    const stream = await gw.client(key).chat.completions.create({
      model: model.id,
      messages: userMessage('Weather in Paris?'),
      tools: [
        {
          type: 'function',
          function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
        },
      ],
      stream: true,
      stream_options: { include_usage: true },
    });
    let id: string | undefined;
    let name = '';
    let argumentsText = '';
    let finish: string | null | undefined;
    let deltas = 0;
    let cost: number | undefined;
    for await (const chunk of stream) {
      for (const call of chunk.choices[0]?.delta.tool_calls ?? []) {
        deltas++;
        expect(call.index).toBe(0);
        if (call.id) id = call.id;
        name += call.function?.name ?? '';
        argumentsText += call.function?.arguments ?? '';
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) cost = (chunk.usage as unknown as { cost: number }).cost;
    }
    expect(id).toBe('call_abc');
    expect(name).toBe('get_weather');
    expect(argumentsText).toBe(args);
    expect(deltas).toBe(5);
    expect(finish).toBe('tool_calls');
    expect(nano(cost!)).toBe(costNano(model, mockPromptTokens(lastRequest()), 4));
    expect(lastRequest().body.tools[0].function.name).toBe('get_weather');
  });
});

describe('a budget smaller than the request', () => {
  const tokenCost = () => ({ pp: heldPromptPer1k(model), cp: per1k(model.pricing.completion) });

  it('lowers max_tokens sent upstream to what the balance pays', async () => {
    const { id, key } = await gw.account();
    const budget = 0.001;
    await gw.setBalance(id, budget);
    const request = { model: model.id, messages: userMessage('Write a long essay.'), max_tokens: 100_000 };
    const prompt = countPromptTokens(request);
    const { pp, cp } = tokenCost();
    const affordable = Number((nano(budget) * 1000n - BigInt(prompt) * pp) / cp);
    expect(affordable).toBeLessThan(100_000);
    const res = await chat(key, request);
    expect(res.status).toBe(200);
    const seen = lastRequest();
    expect(seen.body.max_tokens).toBe(affordable);
    expect(seen.body.max_completion_tokens).toBeUndefined();
    const body = (await res.json()) as any;
    expect(nano(budget) - (await balance(key))).toBe(nano(body.usage.cost));
  });

  it('lowers max_completion_tokens when the client used that field', async () => {
    const { id, key } = await gw.account();
    const budget = 0.0005;
    await gw.setBalance(id, budget);
    const request = { model: model.id, messages: userMessage('Write a long essay.'), max_completion_tokens: 100_000 };
    const prompt = countPromptTokens(request);
    const { pp, cp } = tokenCost();
    const affordable = Number((nano(budget) * 1000n - BigInt(prompt) * pp) / cp);
    const res = await gw.client(key).chat.completions.create(request);
    expect(res.model).toBe(model.id);
    const seen = lastRequest();
    expect(seen.body.max_completion_tokens).toBe(affordable);
    expect(seen.body.max_tokens).toBeUndefined();
  });

  it('exactly prompt + 1 token is admitted with max_tokens 1; one nano-USD less is a 402 that never reaches the upstream', async () => {
    const { id, key } = await gw.account();
    const request = { model: model.id, messages: userMessage('Hello there, how are you?'), max_tokens: 1000 };
    const prompt = countPromptTokens(request);
    const minimum = holdNano(model, prompt, 1);

    await gw.setBalance(id, Number(minimum - 1n) / 1e9);
    expect(await balance(key)).toBe(minimum - 1n);
    const before = mock.requests.length;
    const error = await apiError(gw.client(key).chat.completions.create(request));
    expect(error.status).toBe(402);
    expect(error.code).toBe('insufficient_credits');
    expect((error.error as any)?.type).toBe('payment_required');
    expect(mock.requests.length).toBe(before);
    expect(await balance(key)).toBe(minimum - 1n);

    await gw.setBalance(id, Number(minimum) / 1e9);
    mock.enqueue({ kind: 'ok', content: 'Hi' });
    await gw.client(key).chat.completions.create(request);
    expect(mock.requests.length).toBe(before + 1);
    expect(lastRequest().body.max_tokens).toBe(1);
    expect(await reservationsOpen()).toBe(0);
  });
});

describe('upstream errors', () => {
  /** Runs a failing request, checks nothing was charged or left reserved and that the next request works. */
  async function failing(run: (key: string) => Promise<unknown>, base = gw): Promise<APIError> {
    const { key } = await base.account();
    const start = await balance(key, base);
    const error = await apiError(run(key));
    expect(await balance(key, base)).toBe(start);
    expect(await reservationsOpen(base)).toBe(0);
    return error;
  }

  async function stillWorks(): Promise<void> {
    const { key } = await gw.account();
    const ok = await gw.client(key).chat.completions.create({ model: model.id, messages: userMessage() });
    expect(ok.choices[0]?.message.content).toBe('Hello from the mock upstream.');
    expect(await reservationsOpen()).toBe(0);
  }

  it('a 400 with param is the client 400 invalid_request with the upstream message and param', async () => {
    for (const stream of [false, true]) {
      mock.enqueue({
        kind: 'error',
        status: 400,
        message: "Invalid value for 'top_logprobs': too many.",
        param: 'top_logprobs',
        code: 'invalid_value',
      });
      const error = await failing((key) =>
        gw.client(key).chat.completions.create({ model: model.id, messages: userMessage(), stream }),
      );
      expect(error.status).toBe(400);
      expect(error.code).toBe('invalid_request');
      expect((error.error as any)?.type).toBe('invalid_request_error');
      expect(error.param).toBe('top_logprobs');
      expect(error.message).toContain("Invalid value for 'top_logprobs': too many.");
    }
    await stillWorks();
  });

  for (const status of [401, 403, 500, 503]) {
    it(`an upstream ${status} is a 502 upstream_error naming the status`, async () => {
      for (const stream of [false, true]) {
        // 5xx are retried (routing.retries times) before the error is final; 401/403 are not.
        const attempts = status >= 500 ? 1 + defaultConfig().routing.retries : 1;
        for (let i = 0; i < attempts; i++)
          mock.enqueue({ kind: 'error', status, message: `Upstream says no (${status})` });
        const error = await failing((key) =>
          gw.client(key).chat.completions.create({ model: model.id, messages: userMessage(), stream }),
        );
        expect(error.status).toBe(502);
        expect(error.code).toBe('upstream_error');
        expect((error.error as any)?.type).toBe('upstream_error');
        expect(error.message).toContain(String(status));
        expect(error.message).not.toContain(UPSTREAM_KEY);
      }
      await stillWorks();
    });
  }

  it('a refused connection is a 502', async () => {
    const port = await new Promise<number>((resolve) => {
      const server = createServer();
      server.listen(0, '127.0.0.1', () => {
        const { port } = server.address() as AddressInfo;
        server.close(() => resolve(port));
      });
    });
    const closed = await startGateway({
      env: { OPENAI_API_KEY: UPSTREAM_KEY, OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1` },
    });
    try {
      for (const stream of [false, true]) {
        const error = await failing(
          (key) => closed.client(key).chat.completions.create({ model: model.id, messages: userMessage(), stream }),
          closed,
        );
        expect(error.status).toBe(502);
        expect(error.code).toBe('upstream_error');
      }
    } finally {
      await closed.close();
    }
  });

  it('an upstream that hangs before its headers is a 504 upstream_timeout within a few seconds', async () => {
    const slow = await startGateway({
      env: { OPENAI_API_KEY: UPSTREAM_KEY, OPENAI_BASE_URL: mock.url },
      overrides: {
        server: { ...defaultConfig().server, port: 0, host: '127.0.0.1', upstream_timeout_ms: 500 },
      } satisfies Partial<Config>,
    });
    try {
      for (const stream of [false, true]) {
        // A timeout is retried (routing.retries times) before the 504.
        for (let i = 0; i <= defaultConfig().routing.retries; i++) mock.enqueue({ kind: 'hang' });
        const started = Date.now();
        const error = await failing(
          (key) => slow.client(key).chat.completions.create({ model: model.id, messages: userMessage(), stream }),
          slow,
        );
        expect(Date.now() - started).toBeLessThan(4_000);
        expect(error.status).toBe(504);
        expect(error.code).toBe('upstream_timeout');
      }
      // The same gateway still answers.
      const { key } = await slow.account();
      const ok = await slow.client(key).chat.completions.create({ model: model.id, messages: userMessage() });
      expect(ok.model).toBe(model.id);
      expect(await reservationsOpen(slow)).toBe(0);
    } finally {
      await slow.close();
    }
  });
});

describe('streams that fail after the first byte', () => {
  /** Reads a raw stream and checks the contract's shape: chunks, then one error event, no [DONE]. */
  async function brokenStream(behavior: Parameters<MockOpenAI['enqueue']>[0], delivered: string) {
    const { id, key } = await gw.account();
    const start = await balance(key);
    mock.enqueue(behavior);
    const request = {
      model: model.id,
      messages: userMessage('Tell me a story.'),
      stream: true,
      stream_options: { include_usage: true },
    };
    const res = await chat(key, request);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const data = sseData(await res.text());
    expect(data).not.toContain('[DONE]');
    const events = data.map((d) => JSON.parse(d));
    const errors = events.filter((e) => e.error);
    expect(errors.length).toBe(1);
    expect(events[events.length - 1]).toBe(errors[0]);
    expect(errors[0].error).toMatchObject({ type: 'upstream_error', code: 'upstream_error' });
    expect(typeof errors[0].error.message).toBe('string');
    expect(errors[0].error).toHaveProperty('param');
    const text = events
      .filter((e) => !e.error)
      .map((e) => e.choices?.[0]?.delta?.content ?? '')
      .join('');
    expect(text).toBe(delivered);
    expect(events.filter((e) => e.usage).length).toBe(0);

    // Charged for the prompt and the delivered tokens only, as the gateway meters them.
    const charged = start - (await balance(key));
    expect(charged).toBeGreaterThan(0n);
    const prompt = countPromptTokens(request);
    expect(charged).toBe(costNano(model, prompt, countTextTokens(delivered)));
    const full = costNano(model, prompt, countTextTokens(delivered + 'part3 part4 part5 part6 part7 part8 part9 '));
    expect(charged).toBeLessThan(full);
    const ledger = await ledgerSum(id);
    expect(ledger.sum).toBe(ledger.balance);
    expect(await reservationsOpen()).toBe(0);
  }

  it('a stream cut by the upstream: the chunks sent, one error event, no [DONE], charged for what was delivered', async () => {
    await brokenStream({ kind: 'cut', afterChunks: 3 }, 'part0 part1 part2 ');
  });

  it('a malformed event mid-stream behaves the same', async () => {
    await brokenStream({ kind: 'malformed', afterChunks: 2 }, 'part0 part1 ');
  });

  it('the SDK raises an APIError for the error event', async () => {
    const { key } = await gw.account();
    for (const behavior of [
      { kind: 'cut', afterChunks: 3 },
      { kind: 'malformed', afterChunks: 3 },
    ] as const) {
      mock.enqueue(behavior);
      const stream = await gw
        .client(key)
        .chat.completions.create({ model: model.id, messages: userMessage(), stream: true });
      let content = '';
      const error = await apiError(
        (async () => {
          for await (const chunk of stream) content += chunk.choices[0]?.delta.content ?? '';
        })(),
      );
      expect(content).toBe('part0 part1 part2 ');
      expect((error.error as any)?.code ?? error.code).toBe('upstream_error');
    }
  });
});

describe('a client that disconnects mid-stream', () => {
  it('closes the upstream soon after, charges the delivered part, and the ledger sums to the balance', async () => {
    const { id, key } = await gw.account();
    const start = await balance(key);
    const request = { model: model.id, messages: userMessage('Count slowly.'), stream: true };
    mock.enqueue({ kind: 'ok', chunks: 20, delayMs: 100 });
    const controller = new AbortController();
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(request),
      signal: controller.signal,
    });
    expect(res.status).toBe(200);
    const seen = lastRequest();
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    let received = '';
    let contentChunks = 0;
    while (contentChunks < 3) {
      const { value, done } = await reader.read();
      expect(done).toBe(false);
      buffer += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) >= 0 && contentChunks < 3) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        for (const line of event.split('\n').filter((l) => l.startsWith('data: '))) {
          const delta = JSON.parse(line.slice(6)).choices?.[0]?.delta?.content;
          if (delta) {
            received += delta;
            contentChunks++;
          }
        }
      }
    }
    const abortedAt = Date.now();
    controller.abort();
    await reader.cancel().catch(() => undefined);

    // The upstream connection goes away soon after, long before the 20 chunks (2 s) would have been sent.
    await until(() => seen.closedAt !== undefined, 1_500);
    expect(seen.completed).toBe(false);
    expect(seen.closedAt! - abortedAt).toBeLessThan(1_000);
    const sentAtClose = seen.eventsSent;
    await sleep(300);
    expect(seen.eventsSent).toBe(sentAtClose);
    expect(sentAtClose).toBeLessThan(20);

    // Charged (once the relay settles) for what was delivered: more than nothing, less than the whole answer.
    await until(async () => (await balance(key)) !== start);
    const charged = start - (await balance(key));
    const prompt = countPromptTokens(request);
    const fullText = Array.from({ length: 20 }, (_, i) => `token${i} `).join('');
    expect(charged).toBeGreaterThan(0n);
    expect(charged).toBeGreaterThanOrEqual(costNano(model, prompt, countTextTokens(received)));
    expect(charged).toBeLessThan(costNano(model, prompt, countTextTokens(fullText)));
    const ledger = await ledgerSum(id);
    expect(ledger.sum).toBe(ledger.balance);
    expect(ledger.balance).toBe(start - charged);
    expect(ledger.entries.filter((e) => e.kind === 'debit').length).toBe(1);
    await until(async () => (await reservationsOpen()) === 0);
  });

  it('closes the upstream request at once when the client gives up before any answer, and charges nothing', async () => {
    const { key } = await gw.account();
    const start = await balance(key);
    mock.enqueue({ kind: 'hang' });
    const controller = new AbortController();
    const sent = fetch(`${gw.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: model.id, messages: userMessage('Take your time.') }),
      signal: controller.signal,
    });
    await until(() => mock.requests.at(-1)?.body?.messages?.[0]?.content === 'Take your time.');
    const seen = lastRequest();
    const abortedAt = Date.now();
    controller.abort();
    await expect(sent).rejects.toThrow();
    await until(() => seen.closedAt !== undefined, 1_500);
    expect(seen.closedAt! - abortedAt).toBeLessThan(1_000);
    await until(async () => (await reservationsOpen()) === 0);
    expect(await balance(key)).toBe(start);
  });
});
