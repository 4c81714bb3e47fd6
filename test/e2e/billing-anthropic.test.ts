/**
 * "Bill what the provider bills", against a local server billing by Anthropic's documented rules (its own token
 * count, prompt caching by breakpoint and ttl, documents fetched by URL, web searches, thinking): every request's
 * charge is exactly the provider's reported usage at the catalog's prices kind by kind (input, cache reads, 5-minute
 * and 1-hour cache writes, output), rounded up to the nano-USD once, plus the web search fee per search; the answer's
 * `usage.cost` (or `x-tollgate-cost`) says the same. Chat completions (translated to Anthropic's Messages) and
 * /v1/messages (native), JSON and streams, through the official `openai` and `@anthropic-ai/sdk` clients; a second
 * identical request is billed as cache reads; a stream the client cuts is charged at least the prompt message_start
 * reported.
 */
import Anthropic from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultConfig } from '../../src/config/index.js';
import { measurePrompt } from '../../src/tokens/index.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import {
  THINKING_TEXT,
  mockTokens,
  startMockAnthropic,
  type MockAnthropic,
  type MockBill,
  type MockUsage,
} from '../support/mock-anthropic.js';

const MODEL = 'claude-billed';
/** USD per 1K tokens (per call for web_search): distinct, and with nano-USD digits so that rounding shows. */
const PRICES = {
  prompt: 0.003000007,
  completion: 0.015000011,
  input_cache_read: 0.000300003,
  input_cache_write: 0.003750005,
  input_cache_write_1h: 0.006000013,
  web_search: 0.010000001,
};
const nanoOf = (usd: number): bigint => BigInt(Math.round(usd * 1e9));
const NANO = {
  prompt: nanoOf(PRICES.prompt),
  completion: nanoOf(PRICES.completion),
  read: nanoOf(PRICES.input_cache_read),
  write: nanoOf(PRICES.input_cache_write),
  write1h: nanoOf(PRICES.input_cache_write_1h),
  search: nanoOf(PRICES.web_search),
};

/** The provider's usage at the catalog's prices, kind by kind, rounded up to the nano-USD once; plus search fees. */
function priced(usage: MockUsage): bigint {
  const writes = BigInt(usage.cache_creation_input_tokens);
  const writes1h = BigInt(usage.cache_creation?.ephemeral_1h_input_tokens ?? 0);
  const per1k =
    BigInt(usage.input_tokens) * NANO.prompt +
    BigInt(usage.cache_read_input_tokens) * NANO.read +
    (writes - writes1h) * NANO.write +
    writes1h * NANO.write1h +
    BigInt(usage.output_tokens) * NANO.completion;
  return (per1k + 999n) / 1000n + BigInt(usage.server_tool_use?.web_search_requests ?? 0) * NANO.search;
}

/** The prompt alone (as message_start reports it), priced the same way. */
const pricedPrompt = (usage: MockUsage): bigint => priced({ ...usage, output_tokens: 0 });

let gateway: TestGateway;
let upstream: MockAnthropic;

beforeAll(async () => {
  upstream = await startMockAnthropic({ apiKey: 'sk-ant-billing', billing: 'documented' });
  gateway = await startGateway({
    env: { ANTHROPIC_API_KEY: 'sk-ant-billing', ANTHROPIC_BASE_URL: upstream.url },
    overrides: {
      routing: { ...defaultConfig().routing, backoff_ms: 5, retries: 0, breaker_failures: 1_000 },
      models: [
        {
          id: MODEL,
          provider: 'anthropic',
          upstream_model: 'claude-billed-upstream',
          pricing: PRICES,
          context_length: 200_000,
          max_tokens: 64_000,
          capabilities: {
            chat: true,
            completion: false,
            function_calling: true,
            vision: true,
            embeddings: false,
            json_mode: true,
          },
          created: 0,
        },
      ],
    },
  });
});
afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
});

async function account(): Promise<{ id: string; key: string }> {
  const created = await gateway.account();
  await gateway.setBalance(created.id, 100);
  return created;
}

async function balance(accountId: string): Promise<bigint> {
  const { body } = await gateway.admin('GET', `/admin/accounts/${accountId}`);
  return BigInt(Math.round(body.balance.credits * 1e9));
}

const nano = (usd: number): bigint => BigInt(Math.round(usd * 1e9));

/** The bill of the last message the mock answered. */
const lastBill = (): MockBill => upstream.bills.at(-1)!;

/** A text of exactly `tokens` tokens by the mock's count (4 bytes each), starting with `seed`. */
const textOf = (tokens: number, seed: string): string => (seed + ' lorem ipsum'.repeat(tokens)).slice(0, tokens * 4);

const anthropic = (key: string) => new Anthropic({ baseURL: gateway.url, apiKey: key, maxRetries: 0 });

/**
 * A chat prompt with three cache breakpoints: a long tool (1-hour ttl), a long system part (5 minutes), and a long
 * user message (LiteLLM's message-level cache_control); then an uncached question.
 */
function cachedChat(seed: string): OpenAI.ChatCompletionCreateParamsNonStreaming {
  // cache_control is the gateways' extension to OpenAI's types.
  const body: unknown = {
    model: MODEL,
    max_tokens: 8_000,
    tools: [
      {
        type: 'function' as const,
        function: {
          name: 'lookup',
          description: textOf(1_100, `${seed} tool`),
          parameters: { type: 'object', properties: { q: { type: 'string' } } },
        },
        cache_control: { type: 'ephemeral', ttl: '1h' },
      },
    ],
    messages: [
      {
        role: 'system' as const,
        content: [
          { type: 'text' as const, text: 'You are terse. ' },
          { type: 'text' as const, text: textOf(1_500, `${seed} manual`), cache_control: { type: 'ephemeral' } },
        ],
      },
      { role: 'user' as const, content: textOf(600, `${seed} history`), cache_control: { type: 'ephemeral' } },
      { role: 'assistant' as const, content: 'Noted.' },
      { role: 'user' as const, content: 'What now?' },
    ],
  };
  return body as OpenAI.ChatCompletionCreateParamsNonStreaming;
}

describe('chat completions translated to Anthropic: the provider bill, kind by kind', () => {
  it('JSON (openai SDK): cache writes by ttl, then reads; thinking billed as output; usage.cost is the charge', async () => {
    const { id, key } = await account();
    const client = gateway.client(key);
    const body = { ...cachedChat('chat-json'), reasoning_effort: 'low' as const };
    const charges: bigint[] = [];
    for (const round of ['write', 'read'] as const) {
      const before = await balance(id);
      const completion = await client.chat.completions.create(body);
      const bill = lastBill();
      const charged = before - (await balance(id));
      if (round === 'write') {
        expect(bill.usage.cache_creation?.ephemeral_1h_input_tokens).toBeGreaterThan(1_000);
        expect(bill.usage.cache_creation?.ephemeral_5m_input_tokens).toBeGreaterThan(2_000);
        expect(bill.usage.cache_read_input_tokens).toBe(0);
        // Thinking went upstream and is in the output billed, not in the text.
        expect(upstream.requests.at(-1)!.body.thinking).toEqual({ type: 'enabled', budget_tokens: 1_600 });
        expect(completion.choices[0]!.message.content).not.toContain(THINKING_TEXT);
        expect(bill.usage.output_tokens).toBe(
          mockTokens(THINKING_TEXT) + mockTokens(completion.choices[0]!.message.content!),
        );
      } else {
        expect(bill.usage.cache_creation_input_tokens).toBe(0);
        expect(bill.usage.cache_read_input_tokens).toBeGreaterThan(3_000);
      }
      const usage = completion.usage as any;
      expect(usage.prompt_tokens_details?.cached_tokens).toBe(bill.usage.cache_read_input_tokens);
      expect(usage.prompt_tokens).toBe(
        bill.usage.input_tokens + bill.usage.cache_creation_input_tokens + bill.usage.cache_read_input_tokens,
      );
      expect(usage.completion_tokens).toBe(bill.usage.output_tokens);
      // The provider's count is billed, not tollgate's.
      expect(usage.prompt_tokens).not.toBe(measurePrompt(body as never).tokens);
      expect(charged).toBe(priced(bill.usage));
      expect(nano(usage.cost)).toBe(charged);
      charges.push(charged);
    }
    expect(charges[1]).toBeLessThan(charges[0]!);
  });

  it('stream with include_usage (openai SDK): the last chunk has the breakdown and the cost charged; then reads', async () => {
    const { id, key } = await account();
    const client = gateway.client(key);
    const charges: bigint[] = [];
    for (const round of ['write', 'read'] as const) {
      const before = await balance(id);
      const stream = await client.chat.completions.create({
        ...cachedChat('chat-stream'),
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = '';
      let usage: any;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta.content ?? '';
        if (chunk.usage) usage = chunk.usage;
      }
      const bill = lastBill();
      const charged = before - (await balance(id));
      expect(text.length).toBeGreaterThan(0);
      expect(bill.usage.cache_read_input_tokens > 0).toBe(round === 'read');
      expect(usage.prompt_tokens_details?.cached_tokens).toBe(bill.usage.cache_read_input_tokens);
      expect(usage.cache_creation_input_tokens).toBe(bill.usage.cache_creation_input_tokens);
      expect(charged).toBe(priced(bill.usage));
      expect(nano(usage.cost)).toBe(charged);
      charges.push(charged);
    }
    expect(charges[1]).toBeLessThan(charges[0]!);
  });

  it('web_search_options: the searches Anthropic ran are billed at the web_search fee', async () => {
    const { id, key } = await account();
    const before = await balance(id);
    const completion = await gateway.client(key).chat.completions.create({
      model: MODEL,
      max_tokens: 500,
      web_search_options: { search_context_size: 'low' },
      messages: [{ role: 'user', content: 'Any news?' }],
    });
    const bill = lastBill();
    expect(upstream.requests.at(-1)!.body.tools).toEqual([
      { type: 'web_search_20250305', name: 'web_search', max_uses: 1 },
    ]);
    expect(bill.usage.server_tool_use).toEqual({ web_search_requests: 1 });
    const charged = before - (await balance(id));
    expect(charged).toBe(priced(bill.usage));
    expect(nano((completion.usage as any).cost)).toBe(charged);
  });
});

/** A Messages body: documents by URL, search results, a web search tool, cache breakpoints on tools and system. */
function messagesBody(seed: string): Anthropic.MessageCreateParamsNonStreaming {
  return {
    model: MODEL,
    max_tokens: 4_000,
    tools: [
      {
        name: 'lookup',
        description: textOf(1_100, `${seed} tool`),
        input_schema: { type: 'object', properties: { q: { type: 'string' } } },
        cache_control: { type: 'ephemeral', ttl: '1h' },
      },
      { type: 'web_search_20250305', name: 'web_search', max_uses: 3 },
    ],
    system: [{ type: 'text', text: textOf(1_300, `${seed} manual`), cache_control: { type: 'ephemeral' } }],
    messages: [
      {
        role: 'user',
        content: [
          { type: 'document', source: { type: 'url', url: 'https://example.com/report.pdf' } },
          {
            type: 'search_result',
            source: 'https://example.com/page',
            title: 'A page',
            content: [{ type: 'text', text: textOf(200, `${seed} found`) }],
          },
          { type: 'text', text: 'Summarise both.' },
        ],
      },
    ],
  } as any;
}

describe('/v1/messages natively: the provider bill, kind by kind', () => {
  it('JSON (@anthropic-ai/sdk): the usage breakdown unchanged, usage.cost and x-tollgate-cost the charge; then reads', async () => {
    const { id, key } = await account();
    const charges: bigint[] = [];
    for (const round of ['write', 'read'] as const) {
      const before = await balance(id);
      const { data: message, response } = await anthropic(key)
        .messages.create(messagesBody('native-json'))
        .withResponse();
      const bill = lastBill();
      const charged = before - (await balance(id));
      const { cost, ...usage } = message.usage as typeof message.usage & { cost: number };
      expect(usage).toEqual(bill.usage);
      expect(nano(cost)).toBe(charged);
      expect(bill.usage.server_tool_use).toEqual({ web_search_requests: 2 });
      expect(bill.usage.cache_read_input_tokens > 0).toBe(round === 'read');
      if (round === 'write') expect(bill.usage.cache_creation?.ephemeral_1h_input_tokens).toBeGreaterThan(1_000);
      expect(charged).toBe(priced(bill.usage));
      expect(nano(Number(response.headers.get('x-tollgate-cost')))).toBe(charged);
      charges.push(charged);
    }
    expect(charges[1]).toBeLessThan(charges[0]!);
  });

  it('stream (@anthropic-ai/sdk): finalMessage has the breakdown, message_delta the cost charged; then reads', async () => {
    const { id, key } = await account();
    const charges: bigint[] = [];
    for (const round of ['write', 'read'] as const) {
      const before = await balance(id);
      const stream = anthropic(key).messages.stream({
        ...messagesBody('native-stream'),
        thinking: { type: 'enabled', budget_tokens: 1_024 },
      });
      let cost: number | undefined;
      stream.on('streamEvent', (event) => {
        if (event.type === 'message_delta') cost = (event.usage as { cost?: number }).cost;
      });
      const final = await stream.finalMessage();
      const bill = lastBill();
      const charged = before - (await balance(id));
      expect(final.usage).toMatchObject(bill.usage as any);
      expect(bill.usage.output_tokens).toBeGreaterThan(mockTokens(THINKING_TEXT));
      expect(bill.usage.cache_read_input_tokens > 0).toBe(round === 'read');
      expect(charged).toBe(priced(bill.usage));
      expect(nano(cost!)).toBe(charged);
      charges.push(charged);
    }
    expect(charges[1]).toBeLessThan(charges[0]!);
  });

  it('a stream the client cuts after the first delta is charged at least the prompt message_start reported', async () => {
    const { id, key } = await account();
    const before = await balance(id);
    upstream.enqueue({ kind: 'ok', text: 'word '.repeat(40), delayMs: 50 });
    const controller = new AbortController();
    const response = await fetch(`${gateway.baseURL}/messages`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ ...messagesBody('native-cut'), stream: true }),
      signal: controller.signal,
    });
    expect(response.status).toBe(200);
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let seen = '';
    while (!seen.includes('content_block_delta')) {
      const { done, value } = await reader.read();
      if (done) break;
      seen += decoder.decode(value, { stream: true });
    }
    controller.abort();
    const bill = lastBill();
    expect(bill.start!.cache_creation_input_tokens).toBeGreaterThan(2_000);
    // The charge is made once the gateway sees the client gone.
    let charged = 0n;
    for (let i = 0; i < 100 && charged === 0n; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      charged = before - (await balance(id));
    }
    expect(charged).toBeGreaterThanOrEqual(pricedPrompt(bill.start!));
    // Cut short: less than the whole answer would have cost.
    expect(charged).toBeLessThan(priced(bill.usage));
  });
});
