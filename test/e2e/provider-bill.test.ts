/**
 * Bill what the provider bills: tollgate in front of local servers that bill as OpenAI and Google document
 * (prompt caching, reasoning, service tiers, a continued Response's whole conversation, fetched files, web
 * searches, another tokenizer's count of Tamil), table-driven over endpoint x JSON/stream x completed/cut x content
 * kind. A completed request moves the balance by exactly the provider's reported usage priced at the catalog kind
 * by kind (computed here in bigint, rounded up once), and its `usage.cost` says the same; a request the client cuts
 * after its first delta is charged at least the prompt the provider processed; a request tollgate cannot price is
 * refused (400 naming the field) before anything is sent. Then 30 concurrent cut continuations of a large stored
 * response at a small balance and a small tokens-per-minute limit, on SQLite and on PostgreSQL + Redis.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultConfig, type ModelConfig } from '../../src/config/index.js';
import { countPromptTokens, countTextTokens } from '../../src/tokens/index.js';
import { describeEach } from '../support/backends.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { startMockGemini, type MockGemini } from '../support/mock-gemini.js';
import { startMockOpenAI, type MockOpenAI, type RecordedRequest } from '../support/mock-openai.js';
import { FILE_TOKENS, SEARCH_CONTENT_TOKENS } from '../support/mock-responses.js';
import { REDIS_TEST_URL } from '../support/redis.js';

// ---------------------------------------------------------------------------------------------------------------
// The catalog: every price kind distinct, each with a ninth decimal so that rounding shows.

interface TokenPrices {
  prompt?: number;
  completion?: number;
  input_cache_read?: number;
  input_cache_write?: number;
  input_cache_write_1h?: number;
  internal_reasoning?: number;
}
interface Pricing extends TokenPrices {
  prompt: number;
  completion: number;
  request?: number;
  web_search?: number;
  tiers?: Array<TokenPrices & { above_prompt_tokens: number }>;
  service_tiers?: Record<string, TokenPrices & { request?: number; web_search?: number }>;
}

const TIER_ABOVE = 50_000;
const GPT_PRICING: Pricing = {
  prompt: 0.001250007,
  completion: 0.010000003,
  input_cache_read: 0.000125001,
  input_cache_write: 0.001562509,
  input_cache_write_1h: 0.002500011,
  internal_reasoning: 0.012000007,
  request: 0.000010001,
  web_search: 0.010000001,
  tiers: [
    {
      above_prompt_tokens: TIER_ABOVE,
      prompt: 0.002500013,
      completion: 0.015000017,
      input_cache_read: 0.000250003,
      internal_reasoning: 0.018000019,
    },
  ],
  service_tiers: {
    priority: {
      prompt: 0.002187509,
      completion: 0.017500011,
      input_cache_read: 0.000218753,
      internal_reasoning: 0.021000013,
    },
  },
};
const GEMINI_PRICING: Pricing = { prompt: 0.000300007, completion: 0.002500009, input_cache_read: 0.000030001 };
const EMBED_PRICING: Pricing = { prompt: 0.000020003, completion: 0 };

const CAPABLE = {
  chat: true,
  completion: true,
  function_calling: true,
  vision: true,
  embeddings: false,
  json_mode: true,
};
const MODELS: ModelConfig[] = [
  {
    id: 'bill-gpt',
    provider: 'openai',
    upstream_model: 'gpt-bill',
    pricing: GPT_PRICING,
    context_length: 200_000,
    max_tokens: 8_192,
    capabilities: CAPABLE,
    created: 0,
  },
  {
    id: 'bill-gemini',
    provider: 'gemini',
    upstream_model: 'gemini-2.5-flash',
    pricing: GEMINI_PRICING,
    context_length: 200_000,
    max_tokens: 8_192,
    capabilities: { ...CAPABLE, completion: false },
    created: 0,
  },
  {
    id: 'bill-embed',
    provider: 'openai',
    upstream_model: 'text-embedding-3-small',
    pricing: EMBED_PRICING,
    context_length: 8_191,
    max_tokens: 0,
    capabilities: { ...CAPABLE, chat: false, completion: false, function_calling: false, embeddings: true },
    created: 0,
  },
];
const PRICING: Record<string, Pricing> = {
  'bill-gpt': GPT_PRICING,
  'bill-gemini': GEMINI_PRICING,
  'bill-embed': EMBED_PRICING,
};

// ---------------------------------------------------------------------------------------------------------------
// The provider's bill, computed here: Σ tokens_kind × price_per_1k_nano_kind, rounded up once, plus fees.

/** USD to nano-USD, exactly (every price above has at most nine decimals). */
const nanoOf = (usd: number | undefined): bigint => BigInt(Math.round((usd ?? 0) * 1e9));
const nano = (usd: number): bigint => BigInt(Math.round(usd * 1e9));

/** A provider's report, kind by kind: prompt and completion are totals (cached inside prompt, reasoning inside completion). */
interface Bill {
  prompt: number;
  cached: number;
  completion: number;
  reasoning: number;
  searches: number;
  serviceTier?: string | undefined;
}

interface Rates {
  prompt: bigint;
  cached: bigint;
  completion: bigint;
  reasoning: bigint;
}

/** The rates that apply to a bill: its service tier's (when priced), then the long-context tier its prompt is above. */
function ratesOf(pricing: Pricing, bill: Pick<Bill, 'prompt' | 'serviceTier'>): { rates: Rates; served: Pricing } {
  const tier = bill.serviceTier !== undefined ? pricing.service_tiers?.[bill.serviceTier] : undefined;
  const served: Pricing = tier ? { ...pricing, ...tier } : pricing;
  const base: Rates = {
    prompt: nanoOf(served.prompt),
    cached: nanoOf(served.input_cache_read ?? served.prompt),
    completion: nanoOf(served.completion),
    reasoning: nanoOf(served.internal_reasoning ?? served.completion),
  };
  const long = (served.tiers ?? [])
    .filter((t) => bill.prompt > t.above_prompt_tokens)
    .sort((a, b) => b.above_prompt_tokens - a.above_prompt_tokens)[0];
  if (!long) return { rates: base, served };
  return {
    served,
    rates: {
      prompt: long.prompt !== undefined ? nanoOf(long.prompt) : base.prompt,
      cached: long.input_cache_read !== undefined ? nanoOf(long.input_cache_read) : base.cached,
      completion: long.completion !== undefined ? nanoOf(long.completion) : base.completion,
      reasoning: long.internal_reasoning !== undefined ? nanoOf(long.internal_reasoning) : base.reasoning,
    },
  };
}

function priceOf(pricing: Pricing, bill: Bill): bigint {
  const { rates, served } = ratesOf(pricing, bill);
  const per1k =
    BigInt(bill.prompt - bill.cached) * rates.prompt +
    BigInt(bill.cached) * rates.cached +
    BigInt(bill.completion - bill.reasoning) * rates.completion +
    BigInt(bill.reasoning) * rates.reasoning;
  return (per1k + 999n) / 1000n + nanoOf(served.request) + BigInt(bill.searches) * nanoOf(served.web_search);
}

/** The least a prompt of `tokens` costs: every token at the plain input price (of the long-context tier it is in). */
function plainPromptOf(pricing: Pricing, tokens: number, serviceTier?: string): bigint {
  const { rates } = ratesOf(pricing, { prompt: tokens, serviceTier });
  return (BigInt(tokens) * rates.prompt + 999n) / 1000n;
}

/** The mock's report of a request it served, read as the provider's own field names say. */
function billOf(endpoint: Endpoint, record: RecordedRequest): Bill {
  const usage = record.usage;
  expect(usage, `the mock reported usage for ${record.path}`).toBeDefined();
  if (endpoint === 'responses') {
    return {
      prompt: usage.input_tokens,
      cached: usage.input_tokens_details?.cached_tokens ?? 0,
      completion: usage.output_tokens,
      reasoning: usage.output_tokens_details?.reasoning_tokens ?? 0,
      searches: record.webSearches ?? 0,
      serviceTier: tierEcho(record.body.service_tier),
    };
  }
  if (endpoint === 'gemini') {
    return {
      prompt: usage.promptTokenCount,
      cached: usage.cachedContentTokenCount ?? 0,
      completion: usage.candidatesTokenCount + (usage.thoughtsTokenCount ?? 0),
      reasoning: usage.thoughtsTokenCount ?? 0,
      searches: 0,
    };
  }
  return {
    prompt: usage.prompt_tokens,
    cached: usage.prompt_tokens_details?.cached_tokens ?? 0,
    completion: usage.completion_tokens ?? 0,
    reasoning: usage.completion_tokens_details?.reasoning_tokens ?? 0,
    searches: 0,
    serviceTier: tierEcho(record.body.service_tier),
  };
}

const tierEcho = (tier: unknown) => (typeof tier === 'string' ? (tier === 'auto' ? 'default' : tier) : undefined);

// ---------------------------------------------------------------------------------------------------------------
// The servers.

const ANSWER = 'One two three four five six seven eight nine ten eleven twelve.';
/** About 1,700 of the mocks' tokens: a prefix long enough to be cached (1,024 tokens at least). */
const LONG_CONTEXT = 'Tollgate puts model providers behind one OpenAI-compatible API and bills prepaid credit. '.repeat(
  76,
);
const TAMIL = 'வணக்கம் உலகம். இது ஒரு சோதனை வாக்கியம், தமிழில் எழுதப்பட்டது. '.repeat(12);

let gw: TestGateway;
let openai: MockOpenAI;
let gemini: MockGemini;

const routing = { ...defaultConfig().routing, retries: 0, backoff_ms: 5, breaker_failures: 1_000 };
const PLANS = {
  ...defaultConfig().plans,
  roomy: { requests_per_minute: 10_000, tokens_per_minute: 100_000_000 },
  /** The concurrency row's plan: a small tokens-per-minute limit. */
  small: { requests_per_minute: 10_000, tokens_per_minute: 150_000 },
};

async function startMocks(): Promise<{ openai: MockOpenAI; gemini: MockGemini }> {
  // Streams are slow enough (a word every 30 ms) for a client to cut them after the first delta.
  const o = await startMockOpenAI({
    apiKey: 'sk-bill',
    promptCaching: true,
    behavior: { kind: 'ok', content: ANSWER, delayMs: 30 },
  });
  const g = await startMockGemini({ apiKey: 'gm-bill', implicitCaching: true });
  g.setBehavior({ kind: 'ok', text: ANSWER, delayMs: 30 });
  return { openai: o, gemini: g };
}

function gatewayOptions(o: MockOpenAI, g: MockGemini) {
  return {
    env: { OPENAI_API_KEY: 'sk-bill', OPENAI_BASE_URL: o.url, GEMINI_API_KEY: 'gm-bill', GEMINI_BASE_URL: g.url },
    overrides: { routing, plans: PLANS, models: MODELS },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Requests through tollgate.

type Endpoint = 'chat' | 'completions' | 'embeddings' | 'responses' | 'gemini';
const PATHS: Record<Endpoint, string> = {
  chat: '/chat/completions',
  gemini: '/chat/completions',
  completions: '/completions',
  embeddings: '/embeddings',
  responses: '/responses',
};

interface Outcome {
  status: number;
  body: any;
  /** The cost the answer told (usage.cost), when it told one. */
  cost?: bigint | undefined;
  /** The answer's usage as the client got it. */
  usage?: any;
}

function post(key: string, endpoint: Endpoint, body: unknown, signal?: AbortSignal, base = gw): Promise<Response> {
  return fetch(`${base.baseURL}${PATHS[endpoint]}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });
}

/** The JSON payloads of an SSE text, in order. */
function sseJson(text: string): any[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('data: ') && line !== 'data: [DONE]')
    .map((line) => JSON.parse(line.slice(6)));
}

/** A whole request: JSON, or a stream read to its end (its usage from the last chunk or `response.completed`). */
async function complete(key: string, endpoint: Endpoint, body: any, base = gw): Promise<Outcome> {
  const response = await post(key, endpoint, body, undefined, base);
  const text = await response.text();
  if (!body.stream || response.status !== 200) {
    const json = JSON.parse(text);
    const usage = json.usage;
    return {
      status: response.status,
      body: json,
      usage,
      cost: usage?.cost !== undefined ? nano(usage.cost) : undefined,
    };
  }
  const events = sseJson(text);
  const usage =
    endpoint === 'responses'
      ? events.find((e) => e.type === 'response.completed')?.response.usage
      : events.findLast((e) => e.usage)?.usage;
  return { status: 200, body: events, usage, cost: usage?.cost !== undefined ? nano(usage.cost) : undefined };
}

/** Whether an SSE text so far carries a delta of the answer's text. */
function hasDelta(endpoint: Endpoint, text: string): boolean {
  return sseJson(text.slice(0, text.lastIndexOf('\n\n') + 1)).some((event) =>
    endpoint === 'responses'
      ? event.type === 'response.output_text.delta'
      : endpoint === 'completions'
        ? event.choices?.some((c: any) => c.text)
        : event.choices?.some((c: any) => c.delta?.content),
  );
}

/** A stream the client reads up to its first delta of text, then abandons. Resolves with the HTTP status. */
async function cut(key: string, endpoint: Endpoint, body: unknown, base = gw): Promise<number> {
  const controller = new AbortController();
  const response = await post(key, endpoint, body, controller.signal, base);
  if (response.status !== 200) {
    await response.text();
    return response.status;
  }
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the stream ended before a delta was seen: ${text}`);
      text += decoder.decode(value, { stream: true });
      if (hasDelta(endpoint, text)) break;
    }
  } finally {
    controller.abort();
  }
  return 200;
}

async function balanceOf(accountId: string, base = gw): Promise<bigint> {
  const { body } = await base.admin('GET', `/admin/accounts/${accountId}`);
  return nano(body.balance.credits);
}

async function debitsOf(accountId: string, base = gw): Promise<any[]> {
  const { body } = await base.admin('GET', `/admin/accounts/${accountId}/ledger?limit=500`);
  return (body.data as any[]).filter((entry) => entry.kind === 'debit');
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

/** A fresh account with room to spend. */
async function richAccount(base = gw): Promise<{ id: string; key: string }> {
  const account = await base.account({ plan: 'roomy' });
  await base.setBalance(account.id, 100);
  return account;
}

const mockOf = (endpoint: Endpoint): MockOpenAI | MockGemini => (endpoint === 'gemini' ? gemini : openai);

// ---------------------------------------------------------------------------------------------------------------
// The table.

type Kind =
  | 'plain'
  | 'cached prefix'
  | 'reasoning'
  | 'priority tier'
  | 'previous_response_id'
  | 'file by URL'
  | 'web search'
  | 'Tamil';

interface Row {
  endpoint: Endpoint;
  kind: Kind;
  stream: boolean;
  cut: boolean;
  /** What the provider reports beyond plain tokens, which the row must see (so that it tests what it names). */
  shows?: (bill: Bill) => void;
}

const MODEL_OF: Record<Endpoint, string> = {
  chat: 'bill-gpt',
  completions: 'bill-gpt',
  responses: 'bill-gpt',
  gemini: 'bill-gemini',
  embeddings: 'bill-embed',
};

/** Asked once per row before the request under test (same account): what makes a prefix cached or a response stored. */
interface Prepared {
  body: any;
}

let sequence = 0;

async function prepare(row: Row, key: string): Promise<Prepared> {
  const n = ++sequence;
  const model = MODEL_OF[row.endpoint];
  const stream = row.stream ? { stream: true } : {};
  const usage = row.stream && row.endpoint !== 'responses' ? { stream_options: { include_usage: true } } : {};
  const chatBody = (content: string, extra: object = {}) => ({
    model,
    messages: [{ role: 'user', content }],
    ...stream,
    ...usage,
    ...extra,
  });
  switch (row.endpoint) {
    case 'embeddings':
      return {
        body: {
          model,
          input: row.kind === 'Tamil' ? [TAMIL, `${TAMIL} ${n}`] : [`plain text number ${n}`, 'and another one'],
        },
      };
    case 'completions':
      return { body: { model, prompt: `Say this is test number ${n}`, max_tokens: 64, ...stream, ...usage } };
    case 'chat':
    case 'gemini':
      switch (row.kind) {
        case 'cached prefix': {
          // The provider saw this prefix (in another request) a moment ago.
          const warm = await complete(
            key,
            row.endpoint,
            chatBody(`${LONG_CONTEXT} Row ${n}: first question.`, { stream: false, stream_options: undefined }),
          );
          expect(warm.status).toBe(200);
          return { body: chatBody(`${LONG_CONTEXT} Row ${n}: second question.`) };
        }
        case 'reasoning':
          if (row.endpoint === 'gemini') {
            gemini.enqueue({ kind: 'ok', text: ANSWER, delayMs: 30, thoughts: 700 });
            return { body: chatBody(`Think about row ${n}.`) };
          }
          return {
            body: chatBody(`Think about row ${n}.`, { reasoning_effort: 'high', max_completion_tokens: 4_000 }),
          };
        case 'priority tier':
          return { body: chatBody(`Quickly, row ${n}.`, { service_tier: 'priority' }) };
        default:
          return { body: chatBody(`Hello there, this is row ${n}. How are you?`) };
      }
    case 'responses': {
      const respond = (input: unknown, extra: object = {}) => ({ model, input, ...stream, ...extra });
      switch (row.kind) {
        case 'previous_response_id': {
          // A stored response with a conversation of its own (input and output): the next one carries it whole.
          const first = await complete(key, 'responses', { model, input: `${LONG_CONTEXT} Remember row ${n}.` });
          expect(first.status).toBe(200);
          return { body: respond(`What was row ${n} about?`, { previous_response_id: first.body.id }) };
        }
        case 'cached prefix': {
          const warm = await complete(key, 'responses', { model, input: `${LONG_CONTEXT} Row ${n}: first question.` });
          expect(warm.status).toBe(200);
          return { body: respond(`${LONG_CONTEXT} Row ${n}: second question.`) };
        }
        case 'reasoning':
          return { body: respond(`Think about row ${n}.`, { reasoning: { effort: 'medium' } }) };
        case 'priority tier':
          return { body: respond(`Quickly, row ${n}.`, { service_tier: 'priority' }) };
        case 'file by URL':
          return {
            body: respond([
              {
                role: 'user',
                content: [
                  { type: 'input_text', text: `Summarise this report (row ${n}).` },
                  { type: 'input_file', file_url: 'https://example.com/annual-report.pdf' },
                ],
              },
            ]),
          };
        case 'web search':
          return {
            body: respond(`Search the news for row ${n}.`, { tools: [{ type: 'web_search' }], max_tool_calls: 2 }),
          };
        default:
          return { body: respond(`Hello there, this is row ${n}.`) };
      }
    }
  }
}

const completedRows: Row[] = [
  ...(['chat', 'completions', 'responses', 'gemini'] as const).flatMap((endpoint) =>
    [false, true].map((stream): Row => ({ endpoint, kind: 'plain', stream, cut: false })),
  ),
  ...[false, true].flatMap((stream): Row[] => [
    {
      endpoint: 'chat',
      kind: 'cached prefix',
      stream,
      cut: false,
      shows: (b) => expect(b.cached).toBeGreaterThanOrEqual(1_024),
    },
    { endpoint: 'chat', kind: 'reasoning', stream, cut: false, shows: (b) => expect(b.reasoning).toBeGreaterThan(0) },
    {
      endpoint: 'chat',
      kind: 'priority tier',
      stream,
      cut: false,
      shows: (b) => expect(b.serviceTier).toBe('priority'),
    },
    {
      endpoint: 'gemini',
      kind: 'cached prefix',
      stream,
      cut: false,
      shows: (b) => expect(b.cached).toBeGreaterThanOrEqual(1_024),
    },
    { endpoint: 'gemini', kind: 'reasoning', stream, cut: false, shows: (b) => expect(b.reasoning).toBe(700) },
    {
      endpoint: 'responses',
      kind: 'previous_response_id',
      stream,
      cut: false,
      // The stored conversation is input again, most of it cached.
      shows: (b) => expect(b.cached).toBeGreaterThanOrEqual(1_024),
    },
    {
      endpoint: 'responses',
      kind: 'cached prefix',
      stream,
      cut: false,
      shows: (b) => expect(b.cached).toBeGreaterThanOrEqual(1_024),
    },
    {
      endpoint: 'responses',
      kind: 'reasoning',
      stream,
      cut: false,
      shows: (b) => expect(b.reasoning).toBeGreaterThan(0),
    },
    {
      endpoint: 'responses',
      kind: 'priority tier',
      stream,
      cut: false,
      shows: (b) => expect(b.serviceTier).toBe('priority'),
    },
    {
      endpoint: 'responses',
      kind: 'file by URL',
      stream,
      cut: false,
      // The file is above the long-context tier's threshold.
      shows: (b) => expect(b.prompt).toBeGreaterThan(Math.max(FILE_TOKENS, TIER_ABOVE)),
    },
    {
      endpoint: 'responses',
      kind: 'web search',
      stream,
      cut: false,
      shows: (b) => {
        expect(b.searches).toBe(2);
        expect(b.prompt).toBeGreaterThan(2 * SEARCH_CONTENT_TOKENS);
      },
    },
  ]),
  { endpoint: 'embeddings', kind: 'plain', stream: false, cut: false },
  { endpoint: 'embeddings', kind: 'Tamil', stream: false, cut: false },
];

const cutRows: Row[] = [
  ...(['chat', 'completions', 'responses', 'gemini'] as const).map((endpoint): Row => ({
    endpoint,
    kind: 'plain',
    stream: true,
    cut: true,
  })),
  // A long prompt Gemini counts with its own tokenizer (the mock: four characters a token): it says its count in the
  // stream's first event, so a cut stream is charged it.
  { endpoint: 'gemini', kind: 'cached prefix', stream: true, cut: true },
  { endpoint: 'chat', kind: 'priority tier', stream: true, cut: true },
  { endpoint: 'responses', kind: 'previous_response_id', stream: true, cut: true },
  { endpoint: 'responses', kind: 'priority tier', stream: true, cut: true },
  { endpoint: 'responses', kind: 'file by URL', stream: true, cut: true },
  { endpoint: 'responses', kind: 'web search', stream: true, cut: true },
];

const title = (row: Row) => `${row.endpoint} | ${row.stream ? 'stream' : 'JSON'} | ${row.kind}`;

describe('tollgate charges exactly the provider’s bill', () => {
  beforeAll(async () => {
    ({ openai, gemini } = await startMocks());
    gw = await startGateway(gatewayOptions(openai, gemini));
  });
  afterAll(async () => {
    await gw?.close();
    await Promise.all([openai?.close(), gemini?.close()]);
  });

  it.each(completedRows.map((row) => [title(row), row] as const))('completed: %s', async (_, row) => {
    const account = await richAccount();
    const { body } = await prepare(row, account.key);
    const mock = mockOf(row.endpoint);
    const sent = mock.requests.length;
    const before = await balanceOf(account.id);

    const outcome = await complete(account.key, row.endpoint, body);
    expect(outcome.status, JSON.stringify(outcome.body)).toBe(200);

    expect(mock.requests.length).toBe(sent + 1);
    const bill = billOf(row.endpoint, mock.requests.at(-1)!);
    row.shows?.(bill);
    const expected = priceOf(PRICING[MODEL_OF[row.endpoint]]!, bill);
    expect(before - (await balanceOf(account.id))).toBe(expected);
    expect(outcome.cost).toBe(expected);
    if (row.endpoint === 'embeddings' && row.kind === 'Tamil') {
      // The provider counts more than tollgate does: its count is billed.
      expect(bill.prompt).toBeGreaterThan(body.input.reduce((s: number, t: string) => s + countTextTokens(t), 0));
    }
  });

  it.each(cutRows.map((row) => [title(row), row] as const))('cut after the first delta: %s', async (_, row) => {
    const account = await richAccount();
    const { body } = await prepare(row, account.key);
    const mock = mockOf(row.endpoint);
    const sent = mock.requests.length;
    const before = await balanceOf(account.id);
    const debits = (await debitsOf(account.id)).length;

    expect(await cut(account.key, row.endpoint, body)).toBe(200);
    const debit = await until('the cut stream’s debit', async () => {
      const all = await debitsOf(account.id);
      return all.length > debits ? all[0] : undefined;
    });

    expect(mock.requests.length).toBe(sent + 1);
    const record = mock.requests.at(-1)!;
    const bill = billOf(row.endpoint, record);
    const charged = before - (await balanceOf(account.id));
    expect(charged).toBe(-nano(debit.amount));
    // The provider billed the whole prompt it processed (a continued conversation, a fetched file, search results
    // included): tollgate charged no less, even at the plain input price.
    const floor = plainPromptOf(PRICING[MODEL_OF[row.endpoint]]!, bill.prompt, bill.serviceTier);
    expect(
      charged,
      `prompt ${bill.prompt} tokens by the provider, ${debit.prompt_tokens} charged`,
    ).toBeGreaterThanOrEqual(floor);
    expect(debit.prompt_tokens).toBeGreaterThanOrEqual(bill.prompt);
  });

  // An OpenAI-format provider says nothing of a stream cut before its usage chunk, so its prompt is charged at
  // tollgate's own count (as held). Where the provider's tokenizer counts more (the mock: four characters a token;
  // OpenAI's own models count o200k, as tollgate does), the difference is not charged: ADR 0052 names this limit.
  it('an OpenAI-format stream cut before its usage is charged the prompt as tollgate counted it', async () => {
    const row: Row = { endpoint: 'chat', kind: 'cached prefix', stream: true, cut: true };
    const account = await richAccount();
    const { body } = await prepare(row, account.key);
    const debits = (await debitsOf(account.id)).length;
    expect(await cut(account.key, row.endpoint, body)).toBe(200);
    const debit = await until('the cut stream’s debit', async () => {
      const all = await debitsOf(account.id);
      return all.length > debits ? all[0] : undefined;
    });
    const held = countPromptTokens(body);
    expect(debit.prompt_tokens).toBe(held);
    expect(billOf(row.endpoint, openai.requests.at(-1)!).prompt).toBeGreaterThan(held);
  });

  it('a web search without max_tool_calls goes upstream bounded as it was held (8 calls)', async () => {
    const account = await richAccount();
    const body = { model: 'bill-gpt', input: 'Search the news.', tools: [{ type: 'web_search' }] };
    const answer = await complete(account.key, 'responses', body);
    expect(answer.status).toBe(200);
    expect(openai.requests.at(-1)!.body.max_tool_calls).toBe(8);
  });

  const refusals: Array<[string, Endpoint, any, string]> = [
    [
      'chat: a service tier without a price (flex)',
      'chat',
      { model: 'bill-gpt', messages: [{ role: 'user', content: 'Hi' }], service_tier: 'flex' },
      'service_tier',
    ],
    [
      'responses: a service tier without a price (flex)',
      'responses',
      { model: 'bill-gpt', input: 'Hi', service_tier: 'flex' },
      'service_tier',
    ],
    [
      'gemini: a service tier its model has no price for',
      'gemini',
      { model: 'bill-gemini', messages: [{ role: 'user', content: 'Hi' }], service_tier: 'priority' },
      'service_tier',
    ],
    [
      'responses: code_interpreter',
      'responses',
      { model: 'bill-gpt', input: 'Run', tools: [{ type: 'code_interpreter', container: { type: 'auto' } }] },
      'tools[0].type',
    ],
  ];

  it.each(refusals)('refused with 400, nothing sent: %s', async (_, endpoint, body, param) => {
    const account = await richAccount();
    const mock = mockOf(endpoint);
    const sent = mock.requests.length;
    const before = await balanceOf(account.id);
    for (const stream of [false, true]) {
      const response = await post(account.key, endpoint, { ...body, stream });
      const json = (await response.json()) as any;
      expect(response.status).toBe(400);
      expect(json.error.param).toBe(param);
    }
    expect(mock.requests.length).toBe(sent);
    expect(await balanceOf(account.id)).toBe(before);
  });

  it('the openai SDK reads cached_tokens and reasoning_tokens on chat unchanged', async () => {
    const account = await richAccount();
    const client = gw.client(account.key);
    const prefix = `${LONG_CONTEXT} SDK row.`;
    await client.chat.completions.create({
      model: 'bill-gpt',
      messages: [{ role: 'user', content: `${prefix} One?` }],
    });
    const completion = await client.chat.completions.create({
      model: 'bill-gpt',
      messages: [{ role: 'user', content: `${prefix} Two?` }],
      reasoning_effort: 'low',
    });
    const reported = openai.requests.at(-1)!.usage;
    expect(reported.prompt_tokens_details.cached_tokens).toBeGreaterThanOrEqual(1_024);
    expect(reported.completion_tokens_details.reasoning_tokens).toBeGreaterThan(0);
    expect(completion.usage?.prompt_tokens_details?.cached_tokens).toBe(reported.prompt_tokens_details.cached_tokens);
    expect(completion.usage?.completion_tokens_details?.reasoning_tokens).toBe(
      reported.completion_tokens_details.reasoning_tokens,
    );
    expect(completion.usage?.prompt_tokens).toBe(reported.prompt_tokens);
    expect(completion.usage?.completion_tokens).toBe(reported.completion_tokens);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// Concurrency: 30 cut continuations of a large stored response, at a small balance and tokens-per-minute limit.

const CONFIGURATIONS: Array<{ name: string; dialect: 'sqlite' | 'postgres'; env: Record<string, string> }> = [
  { name: 'sqlite', dialect: 'sqlite' as const, env: {} },
  {
    name: 'postgres + redis',
    dialect: 'postgres' as const,
    env: { REDIS_URL: REDIS_TEST_URL, TOLLGATE_REDIS_PREFIX: `tgtest:bill:${process.pid}:${Date.now()}:` },
  },
];

describeEach(CONFIGURATIONS)('30 concurrent cut continuations on $name', ({ dialect, env }) => {
  let base: TestGateway;
  let mocks: { openai: MockOpenAI; gemini: MockGemini };

  beforeAll(async () => {
    mocks = await startMocks();
    const options = gatewayOptions(mocks.openai, mocks.gemini);
    base = await startGateway({ dialect, env: { ...options.env, ...env }, overrides: options.overrides });
  });
  afterAll(async () => {
    await base?.close();
    await Promise.all([mocks?.openai.close(), mocks?.gemini.close()]);
  });

  it('never charges past the balance nor below zero, charges at least the provider’s bill, keeps to the TPM limit', async () => {
    const { openai: upstream } = mocks;
    const account = await base.account({ plan: 'small' });
    await base.setBalance(account.id, 10);
    // A large stored response: about 30,000 of the provider's tokens of conversation.
    const big = 'Every request continues this long conversation about billing. '.repeat(1_900);
    const first = await complete(
      account.key,
      'responses',
      { model: 'bill-gpt', input: big, max_output_tokens: 50 },
      base,
    );
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const stored = upstream.requests.at(-1)!.usage;
    const context = stored.input_tokens + stored.output_tokens;
    expect(context).toBeGreaterThan(25_000);

    // A small balance: a continuation holds its whole context at the dearest prompt rate, so about three fit.
    const startUsd = 0.25;
    await base.setBalance(account.id, startUsd);
    const start = nano(startUsd);
    const sent = upstream.requests.length;
    const debitsBefore = (await debitsOf(account.id, base)).length;

    let lowest = start;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const balance = await balanceOf(account.id, base);
        if (balance < lowest) lowest = balance;
        await sleep(20);
      }
    })();
    const statuses = await Promise.all(
      Array.from({ length: 30 }, (_, i) =>
        cut(
          account.key,
          'responses',
          {
            model: 'bill-gpt',
            input: `Continue, request ${i}.`,
            previous_response_id: first.body.id,
            max_output_tokens: 50,
            stream: true,
          },
          base,
        ),
      ),
    );
    const admitted = upstream.requests.slice(sent);
    const debits = await until('every admitted request’s debit', async () => {
      const all = await debitsOf(account.id, base);
      return all.length - debitsBefore >= admitted.length ? all : undefined;
    });
    await sleep(200);
    sampling = false;
    await sampler;

    const ok = statuses.filter((s) => s === 200).length;
    expect(ok).toBe(admitted.length);
    expect(ok).toBeGreaterThan(0);
    expect(statuses.filter((s) => s !== 200).every((s) => s === 402 || s === 429)).toBe(true);
    expect(statuses.some((s) => s === 402 || s === 429)).toBe(true);

    const end = await balanceOf(account.id, base);
    expect(end).toBeGreaterThanOrEqual(0n);
    expect(lowest).toBeGreaterThanOrEqual(0n);
    const charged = debits.slice(0, debits.length - debitsBefore).reduce((sum, d) => sum - nano(d.amount), 0n);
    expect(charged).toBe(start - end);
    expect(charged).toBeLessThanOrEqual(start);

    // What the provider bills the admitted requests (their whole prompt, the output generated before the cut)
    // never exceeds what tollgate charged for them.
    let providerBill = 0n;
    for (const record of admitted) {
      const usage = record.usage;
      expect(usage.input_tokens).toBeGreaterThan(context);
      providerBill += priceOf(GPT_PRICING, {
        prompt: usage.input_tokens,
        cached: usage.input_tokens_details.cached_tokens,
        completion: record.outputSent ?? 0,
        reasoning: 0,
        searches: 0,
      });
    }
    expect(providerBill).toBeLessThanOrEqual(charged);

    // The tokens-per-minute limit held: the prompts the provider took in within the minute, the stored one's
    // included, are within it.
    const tokensInMinute = [stored, ...admitted.map((r) => r.usage)].reduce((sum, u) => sum + u.input_tokens, 0);
    expect(tokensInMinute).toBeLessThanOrEqual(PLANS.small.tokens_per_minute);
  });
});
