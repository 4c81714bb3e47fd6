/**
 * The Anthropic adapter's translation of what hosted gateways accept for Claude on the chat API: prompt caching
 * (`cache_control` on parts, messages and tools), extended thinking (`reasoning_effort`, `thinking`) and web search
 * (`web_search_options`); and Anthropic's usage in the chat shape, kind by kind, against the Anthropic mock's
 * documented billing (the mock's own rules checked first).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAnthropicProvider, type AnthropicProvider } from '../../src/providers/anthropic/index.js';
import { toAnthropicRequest } from '../../src/providers/anthropic/request.js';
import { StreamTranslator, toUsage } from '../../src/providers/anthropic/response.js';
import { UpstreamError, type ChatRequest } from '../../src/providers/index.js';
import { chatUsage } from '../../src/pricing/index.js';
import {
  IMAGE_TOKENS,
  SEARCH_RESULT_TOKENS,
  THINKING_TEXT,
  URL_DOCUMENT_TOKENS,
  mockTokens,
  startMockAnthropic,
  type MockAnthropic,
} from '../support/mock-anthropic.js';
import { PNG, callFor, collect } from '../support/provider-calls.js';

const request = (body: Partial<ChatRequest> & Record<string, unknown>): ChatRequest => ({
  model: 'claude-test',
  messages: [{ role: 'user', content: 'Hi' }],
  ...body,
});
const translate = (body: Partial<ChatRequest> & Record<string, unknown>, defaultMaxTokens?: number) =>
  toAnthropicRequest('anthropic', request(body), false, defaultMaxTokens).body as any;

function refusal(body: Partial<ChatRequest> & Record<string, unknown>): UpstreamError {
  try {
    translate(body);
  } catch (error) {
    expect(error).toBeInstanceOf(UpstreamError);
    return error as UpstreamError;
  }
  throw new Error('translated');
}

const EPHEMERAL = { type: 'ephemeral' };
const HOUR = { type: 'ephemeral', ttl: '1h' };

describe('cache_control through the chat translation', () => {
  it('on user text and image parts: on their blocks, ttl kept', () => {
    const body = translate({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'A long document', cache_control: HOUR },
            { type: 'image_url', image_url: { url: 'https://example.com/a.png' }, cache_control: EPHEMERAL },
            { type: 'text', text: 'The question' },
          ],
        },
      ] as any,
    });
    expect(body.messages[0].content).toEqual([
      { type: 'text', text: 'A long document', cache_control: HOUR },
      { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' }, cache_control: EPHEMERAL },
      { type: 'text', text: 'The question' },
    ]);
  });

  it("on a message (LiteLLM's form): on the last block it became, string content or parts, any role", () => {
    const body = translate({
      messages: [
        { role: 'system', content: 'Be terse.', cache_control: EPHEMERAL },
        { role: 'user', content: 'Question one', cache_control: HOUR },
        {
          role: 'assistant',
          content: 'Let me look.',
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{}' } }],
          cache_control: EPHEMERAL,
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'result', cache_control: EPHEMERAL },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'a' },
            { type: 'text', text: 'b' },
          ],
          cache_control: EPHEMERAL,
        },
      ] as any,
      tools: [{ type: 'function', function: { name: 'f' } }],
    });
    expect(body.system).toEqual([{ type: 'text', text: 'Be terse.', cache_control: EPHEMERAL }]);
    expect(body.messages[0].content).toEqual([{ type: 'text', text: 'Question one', cache_control: HOUR }]);
    expect(body.messages[1].content).toEqual([
      { type: 'text', text: 'Let me look.' },
      { type: 'tool_use', id: 'call_1', name: 'f', input: {}, cache_control: EPHEMERAL },
    ]);
    // The tool result and the next user turn are one user message; each keeps its own breakpoint.
    expect(body.messages[2].content).toEqual([
      { type: 'tool_result', tool_use_id: 'call_1', content: 'result', cache_control: EPHEMERAL },
      { type: 'text', text: 'a' },
      { type: 'text', text: 'b', cache_control: EPHEMERAL },
    ]);
  });

  it('system and developer parts with cache_control stay blocks of their own; without, they are joined as before', () => {
    const body = translate({
      messages: [
        {
          role: 'system',
          content: [
            { type: 'text', text: 'You are an agent. ' },
            { type: 'text', text: 'Here is the whole manual.', cache_control: HOUR },
            { type: 'text', text: 'Today is Monday.' },
          ],
        },
        {
          role: 'developer',
          content: [
            { type: 'text', text: 'Use ' },
            { type: 'text', text: 'English.' },
          ],
        },
        { role: 'user', content: 'Hi' },
      ] as any,
    });
    expect(body.system).toEqual([
      { type: 'text', text: 'You are an agent. ' },
      { type: 'text', text: 'Here is the whole manual.', cache_control: HOUR },
      { type: 'text', text: 'Today is Monday.' },
      { type: 'text', text: 'Use English.' },
    ]);
  });

  it('assistant and tool parts with cache_control stay blocks of their own', () => {
    const body = translate({
      messages: [
        { role: 'user', content: 'Hi' },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'One. ' },
            { type: 'text', text: 'Two.', cache_control: EPHEMERAL },
          ],
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }],
        },
        {
          role: 'tool',
          tool_call_id: 'call_1',
          content: [
            { type: 'text', text: 'big output', cache_control: EPHEMERAL },
            { type: 'text', text: 'tail' },
          ],
        },
      ] as any,
      tools: [{ type: 'function', function: { name: 'f' } }],
    });
    expect(body.messages[1].content).toEqual([
      { type: 'text', text: 'One. ' },
      { type: 'text', text: 'Two.', cache_control: EPHEMERAL },
      { type: 'tool_use', id: 'call_1', name: 'f', input: { a: 1 } },
    ]);
    expect(body.messages[2].content).toEqual([
      {
        type: 'tool_result',
        tool_use_id: 'call_1',
        content: [
          { type: 'text', text: 'big output', cache_control: EPHEMERAL },
          { type: 'text', text: 'tail' },
        ],
      },
    ]);
  });

  it('on tools: on the Anthropic tool', () => {
    const body = translate({
      tools: [
        { type: 'function', function: { name: 'a', parameters: { type: 'object' } } },
        { type: 'function', function: { name: 'b' }, cache_control: HOUR },
      ] as any,
    });
    expect(body.tools).toEqual([
      { name: 'a', input_schema: { type: 'object' } },
      { name: 'b', input_schema: { type: 'object', properties: {} }, cache_control: HOUR },
    ]);
  });

  it('a cache_control that is not ephemeral with a 5m or 1h ttl is the client 400, naming where it is', () => {
    const part = refusal({
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'x', cache_control: { type: 'persistent' } }] },
      ] as any,
    });
    expect(part).toMatchObject({ status: 400, param: 'messages[0].content[0].cache_control' });
    const ttl = refusal({
      messages: [{ role: 'user', content: 'x', cache_control: { type: 'ephemeral', ttl: '2h' as '1h' } }],
    });
    expect(ttl).toMatchObject({ status: 400, param: 'messages[0].cache_control' });
    const tool = refusal({ tools: [{ type: 'function', function: { name: 'f' }, cache_control: 'yes' }] as any });
    expect(tool).toMatchObject({ status: 400, param: 'tools[0].cache_control' });
  });
});

describe('thinking through the chat translation', () => {
  it('reasoning_effort: a share of max_tokens, at least 1,024, at most 32,000, always below max_tokens', () => {
    const budget = (effort: string, maxTokens?: number, defaultMax?: number) =>
      translate({ reasoning_effort: effort, ...(maxTokens ? { max_tokens: maxTokens } : {}) }, defaultMax).thinking;
    expect(budget('low', 10_000)).toEqual({ type: 'enabled', budget_tokens: 2_000 });
    expect(budget('medium', 10_000)).toEqual({ type: 'enabled', budget_tokens: 5_000 });
    expect(budget('high', 10_000)).toEqual({ type: 'enabled', budget_tokens: 8_000 });
    expect(budget('minimal', 10_000)).toEqual({ type: 'enabled', budget_tokens: 1_024 });
    expect(budget('high', undefined, 128_000)).toEqual({ type: 'enabled', budget_tokens: 32_000 });
    expect(budget('low', 1_500)).toEqual({ type: 'enabled', budget_tokens: 1_024 });
    expect(budget('high', 1_025)).toEqual({ type: 'enabled', budget_tokens: 1_024 });
    // No room for Anthropic's smallest budget: thinking stays off.
    expect(budget('high', 1_024)).toBeUndefined();
    expect(budget('none', 10_000)).toBeUndefined();
    expect(refusal({ reasoning_effort: 'extreme' })).toMatchObject({ status: 400, param: 'reasoning_effort' });
  });

  it("Anthropic's thinking field: its budget, lowered below max_tokens; adaptive and disabled; it wins over reasoning_effort", () => {
    expect(translate({ max_tokens: 8_000, thinking: { type: 'enabled', budget_tokens: 3_000 } }).thinking).toEqual({
      type: 'enabled',
      budget_tokens: 3_000,
    });
    expect(translate({ max_tokens: 2_000, thinking: { type: 'enabled', budget_tokens: 3_000 } }).thinking).toEqual({
      type: 'enabled',
      budget_tokens: 1_999,
    });
    expect(
      translate({ max_tokens: 900, thinking: { type: 'enabled', budget_tokens: 3_000 } }).thinking,
    ).toBeUndefined();
    expect(translate({ thinking: { type: 'adaptive' } }).thinking).toEqual({ type: 'adaptive' });
    expect(translate({ thinking: { type: 'disabled' }, reasoning_effort: 'high' }).thinking).toBeUndefined();
    expect(
      translate({ max_tokens: 10_000, thinking: { type: 'enabled', budget_tokens: 1_500 }, reasoning_effort: 'high' })
        .thinking,
    ).toEqual({ type: 'enabled', budget_tokens: 1_500 });
    const incomplete: unknown = { type: 'enabled' };
    expect(refusal({ thinking: incomplete as never })).toMatchObject({ status: 400, param: 'thinking' });
    expect(refusal({ thinking: true as never })).toMatchObject({ status: 400, param: 'thinking' });
  });

  it('with thinking: no temperature, top_p only from 0.95; with a forced tool (tool_choice, JSON mode), Anthropic thinking is the client 400, reasoning_effort left out', () => {
    const thinking = { max_tokens: 4_000, reasoning_effort: 'medium' };
    const plain = translate({ ...thinking, temperature: 0.3 });
    expect(plain.temperature).toBeUndefined();
    expect(plain.top_p).toBeUndefined();
    expect(translate({ ...thinking, top_p: 0.97 }).top_p).toBe(0.97);
    expect(translate({ ...thinking, top_p: 0.5 }).top_p).toBeUndefined();
    const tools = [{ type: 'function' as const, function: { name: 'f' } }];
    expect(translate({ ...thinking, tools, tool_choice: 'auto' }).tool_choice).toEqual({ type: 'auto' });
    const anthropicThinking = { max_tokens: 4_000, thinking: { type: 'enabled' as const, budget_tokens: 2_000 } };
    expect(refusal({ ...anthropicThinking, tools, tool_choice: 'required' })).toMatchObject({
      status: 400,
      param: 'tool_choice',
    });
    expect(refusal({ ...anthropicThinking, response_format: { type: 'json_object' } })).toMatchObject({
      status: 400,
      param: 'response_format',
    });
    // reasoning_effort is a hint clients send to any model: a forced tool leaves thinking out, sampling as without.
    const forced = translate({ ...thinking, temperature: 0.3, tools, tool_choice: 'required' });
    expect(forced.thinking).toBeUndefined();
    expect(forced.temperature).toBe(0.3);
    expect(forced.tool_choice).toEqual({ type: 'any' });
    const json = translate({ ...thinking, response_format: { type: 'json_object' } });
    expect(json.thinking).toBeUndefined();
    expect(json.tool_choice).toEqual({ type: 'tool', name: 'json_response' });
    // Without thinking, nothing changes.
    expect(translate({ temperature: 0.3 }).temperature).toBe(0.3);
  });

  it('a request that continues an assistant turn (tool results, a prefill) goes without thinking: chat cannot carry its signed block', () => {
    const tools = [{ type: 'function' as const, function: { name: 'f' } }];
    const call = { id: 'call_1', type: 'function' as const, function: { name: 'f', arguments: '{}' } };
    const loop = translate({
      max_tokens: 4_000,
      thinking: { type: 'enabled', budget_tokens: 2_000 },
      tools,
      messages: [
        { role: 'user', content: 'Use f' },
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: 'call_1', content: 'done' },
      ],
    });
    expect(loop.thinking).toBeUndefined();
    const prefill = translate({
      max_tokens: 4_000,
      reasoning_effort: 'high',
      messages: [
        { role: 'user', content: 'Answer in JSON' },
        { role: 'assistant', content: '{' },
      ],
    });
    expect(prefill.thinking).toBeUndefined();
    // A new user turn after the tool loop thinks again.
    const next = translate({
      max_tokens: 4_000,
      reasoning_effort: 'high',
      tools,
      messages: [
        { role: 'user', content: 'Use f' },
        { role: 'assistant', content: null, tool_calls: [call] },
        { role: 'tool', tool_call_id: 'call_1', content: 'done' },
        { role: 'assistant', content: 'Done.' },
        { role: 'user', content: 'Thanks, and now?' },
      ],
    });
    expect(next.thinking).toEqual({ type: 'enabled', budget_tokens: 3_200 });
  });
});

describe('web_search_options through the chat translation', () => {
  it("becomes Anthropic's web search tool, max_uses by search_context_size, the approximate location kept", () => {
    expect(translate({ web_search_options: {} }).tools).toEqual([
      { type: 'web_search_20250305', name: 'web_search', max_uses: 5 },
    ]);
    const body = translate({
      tools: [{ type: 'function', function: { name: 'f' } }],
      web_search_options: {
        search_context_size: 'low',
        user_location: { type: 'approximate', approximate: { city: 'Paris', country: 'FR', extra: 1 } },
      },
    });
    expect(body.tools).toEqual([
      { name: 'f', input_schema: { type: 'object', properties: {} } },
      {
        type: 'web_search_20250305',
        name: 'web_search',
        max_uses: 1,
        user_location: { type: 'approximate', city: 'Paris', country: 'FR' },
      },
    ]);
    // JSON mode with a server tool asks for JSON in the system prompt rather than forcing a tool.
    const json = translate({
      web_search_options: { search_context_size: 'high' },
      response_format: { type: 'json_object' },
    });
    expect(json.tools).toEqual([{ type: 'web_search_20250305', name: 'web_search', max_uses: 10 }]);
    expect(json.tool_choice).toBeUndefined();
    expect(refusal({ web_search_options: { search_context_size: 'huge' as 'high' } })).toMatchObject({
      status: 400,
      param: 'web_search_options.search_context_size',
    });
  });
});

describe("Anthropic's usage in the chat shape", () => {
  const usage = {
    input_tokens: 100,
    cache_creation_input_tokens: 300,
    cache_read_input_tokens: 2_000,
    cache_creation: { ephemeral_5m_input_tokens: 100, ephemeral_1h_input_tokens: 200 },
    output_tokens: 50,
    server_tool_use: { web_search_requests: 2 },
    service_tier: 'standard',
  };

  it("prompt_tokens is every input token, cached_tokens the reads; Anthropic's fields stay alongside", () => {
    expect(toUsage(usage)).toEqual({
      prompt_tokens: 2_400,
      completion_tokens: 50,
      total_tokens: 2_450,
      prompt_tokens_details: { cached_tokens: 2_000 },
      cache_creation_input_tokens: 300,
      cache_read_input_tokens: 2_000,
      cache_creation: { ephemeral_5m_input_tokens: 100, ephemeral_1h_input_tokens: 200 },
      server_tool_use: { web_search_requests: 2 },
      service_tier: 'standard',
    });
    // What the gateway bills from it, kind by kind.
    expect(chatUsage(toUsage(usage), { prompt: 0, completion: () => 0 })).toEqual({
      input: 100,
      cacheRead: 2_000,
      cacheWrite: 100,
      cacheWrite1h: 200,
      output: 50,
      reasoning: 0,
      images: 0,
      webSearch: 2,
      serviceTier: 'standard',
    });
  });

  it('without both counts there is no usage; null cache counts are none', () => {
    expect(toUsage({ input_tokens: 3 })).toBeUndefined();
    expect(toUsage('x')).toBeUndefined();
    expect(toUsage({ input_tokens: 3, output_tokens: 1, cache_creation_input_tokens: null })).toEqual({
      prompt_tokens: 3,
      completion_tokens: 1,
      total_tokens: 4,
      prompt_tokens_details: { cached_tokens: 0 },
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    });
  });

  it("a stream's usage: message_start's, then message_delta's (cumulative, nulls ignored)", () => {
    const translator = new StreamTranslator('anthropic', false);
    const { output_tokens: _o, server_tool_use: _s, ...started } = usage;
    translator.translate(
      'message_start',
      JSON.stringify({
        type: 'message_start',
        message: { id: 'm', model: 'c', usage: { ...started, output_tokens: 1 } },
      }),
    );
    translator.translate(
      'message_delta',
      JSON.stringify({
        type: 'message_delta',
        delta: { stop_reason: 'end_turn' },
        usage: {
          input_tokens: 5_100,
          cache_read_input_tokens: null,
          output_tokens: 50,
          server_tool_use: { web_search_requests: 2 },
        },
      }),
    );
    const chunk = translator.translate('message_stop', '{"type":"message_stop"}');
    expect(chunk?.usage).toEqual({ ...toUsage({ ...usage, input_tokens: 5_100 }) });
    expect(chunk?.usage?.prompt_tokens).toBe(7_400);
  });
});

describe("the mock's documented billing", () => {
  let mock: MockAnthropic;
  let provider: AnthropicProvider;
  const call = callFor('claude-test');
  /** A text of exactly `tokens` mock tokens. */
  const textOf = (tokens: number, seed: string) => (seed + 'x'.repeat(tokens * 4)).slice(0, tokens * 4);

  beforeAll(async () => {
    mock = await startMockAnthropic({ apiKey: 'sk-ant-doc', billing: 'documented' });
    provider = createAnthropicProvider({ id: 'anthropic', baseUrl: mock.url, apiKey: 'sk-ant-doc' });
  });
  afterAll(async () => {
    await provider.close();
    await mock.close();
  });

  async function send(body: any) {
    const response = await fetch(`${mock.url}/messages`, {
      method: 'POST',
      headers: { 'x-api-key': 'sk-ant-doc', 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'claude-test', max_tokens: 4_000, ...body }),
    });
    return { status: response.status, body: (await response.json()) as any };
  }

  it('a prefix up to a breakpoint is written first, read after; input is the uncached rest; below 1,024 tokens nothing is cached', async () => {
    const system = [{ type: 'text', text: textOf(1_500, 'manual A'), cache_control: { type: 'ephemeral' } }];
    const messages = [{ role: 'user', content: textOf(10, 'q1') }];
    const first = await send({ system, messages });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.usage).toMatchObject({
      input_tokens: 10,
      cache_creation_input_tokens: 1_500,
      cache_read_input_tokens: 0,
      cache_creation: { ephemeral_5m_input_tokens: 1_500, ephemeral_1h_input_tokens: 0 },
      output_tokens: mockTokens(first.body.content[0].text),
    });
    const again = await send({ system, messages: [{ role: 'user', content: textOf(20, 'q2') }] });
    expect(again.body.usage).toMatchObject({
      input_tokens: 20,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 1_500,
    });
    const short = [{ type: 'text', text: textOf(1_000, 'short'), cache_control: { type: 'ephemeral' } }];
    for (let i = 0; i < 2; i++)
      expect((await send({ system: short, messages })).body.usage).toMatchObject({
        input_tokens: 1_010,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
      });
  });

  it('several breakpoints: tools, system and messages in that order; the writes split by ttl; the longest cached prefix read', async () => {
    const tool = {
      name: 'lookup',
      input_schema: { type: 'object', properties: { q: { type: 'string' } } },
      cache_control: { type: 'ephemeral', ttl: '1h' },
    };
    const toolTokens = mockTokens(JSON.stringify({ name: tool.name, input_schema: tool.input_schema }));
    const system = [{ type: 'text', text: textOf(2_000, 'manual B'), cache_control: { type: 'ephemeral', ttl: '1h' } }];
    const history = (question: string) => [
      { role: 'user', content: [{ type: 'text', text: textOf(800, 'history'), cache_control: { type: 'ephemeral' } }] },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: question },
    ];
    const first = await send({ tools: [tool], system, messages: history('first question') });
    expect(first.body.usage).toMatchObject({
      input_tokens: mockTokens('ok') + mockTokens('first question'),
      cache_creation_input_tokens: toolTokens + 2_800,
      cache_read_input_tokens: 0,
      cache_creation: { ephemeral_1h_input_tokens: toolTokens + 2_000, ephemeral_5m_input_tokens: 800 },
    });
    const second = await send({ tools: [tool], system, messages: history('second question') });
    expect(second.body.usage).toMatchObject({
      input_tokens: mockTokens('ok') + mockTokens('second question'),
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: toolTokens + 2_800,
    });
    // A changed history: the tools and system prefix is read, the history written anew.
    const changed = [
      { role: 'user', content: [{ type: 'text', text: textOf(900, 'other'), cache_control: { type: 'ephemeral' } }] },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: 'q' },
    ];
    const third = await send({ tools: [tool], system, messages: changed });
    expect(third.body.usage).toMatchObject({
      cache_read_input_tokens: toolTokens + 2_000,
      cache_creation_input_tokens: 900,
      cache_creation: { ephemeral_5m_input_tokens: 900, ephemeral_1h_input_tokens: 0 },
    });
    // Another model has its own cache.
    const other = await send({ model: 'claude-other', tools: [tool], system, messages: history('second question') });
    expect(other.body.usage.cache_read_input_tokens).toBe(0);
  });

  it('documents and images by URL add fixed counts, search results their text; more than four breakpoints is a 400', async () => {
    const searchResult = {
      type: 'search_result',
      source: 'https://example.com/doc',
      title: 'Doc',
      content: [{ type: 'text', text: textOf(30, 'found') }],
    };
    const answer = await send({
      messages: [
        {
          role: 'user',
          content: [
            { type: 'document', source: { type: 'url', url: 'https://example.com/a.pdf' } },
            { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
            searchResult,
            { type: 'text', text: 'Summarise' },
          ],
        },
      ],
    });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.usage.input_tokens).toBe(
      URL_DOCUMENT_TOKENS + 2 * IMAGE_TOKENS + mockTokens('https://example.com/docDoc') + 30 + mockTokens('Summarise'),
    );
    const marked = { type: 'text', text: 'x', cache_control: { type: 'ephemeral' } };
    const many = await send({ messages: [{ role: 'user', content: [marked, marked, marked, marked, marked] }] });
    expect(many.status).toBe(400);
  });

  it('web search runs k <= max_uses searches, their results input; thinking is output; the budget must be below max_tokens', async () => {
    const search = await send({
      tools: [{ type: 'web_search_20250305', name: 'web_search', max_uses: 1 }],
      messages: [{ role: 'user', content: 'news?' }],
    });
    expect(search.status, JSON.stringify(search.body)).toBe(200);
    expect(search.body.usage.server_tool_use).toEqual({ web_search_requests: 1 });
    const toolTokens = mockTokens(JSON.stringify({ type: 'web_search_20250305', name: 'web_search', max_uses: 1 }));
    expect(search.body.usage.input_tokens).toBe(toolTokens + mockTokens('news?') + SEARCH_RESULT_TOKENS);
    expect(search.body.content.map((b: any) => b.type)).toEqual(['server_tool_use', 'web_search_tool_result', 'text']);

    const thinking = await send({
      thinking: { type: 'enabled', budget_tokens: 1_024 },
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(thinking.body.content[0]).toMatchObject({ type: 'thinking', thinking: THINKING_TEXT });
    expect(thinking.body.usage.output_tokens).toBe(
      mockTokens(THINKING_TEXT) + mockTokens(thinking.body.content[1].text),
    );
    const over = await send({
      max_tokens: 1_024,
      thinking: { type: 'enabled', budget_tokens: 1_024 },
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(over.status).toBe(400);
    const hot = await send({
      temperature: 0.5,
      thinking: { type: 'enabled', budget_tokens: 1_024 },
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(hot.status).toBe(400);
    const unsigned = await send({
      thinking: { type: 'enabled', budget_tokens: 1_024 },
      tools: [{ name: 'f', input_schema: { type: 'object' } }],
      messages: [
        { role: 'user', content: 'Use f' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'f', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'done' }] },
      ],
    });
    expect(unsigned.status).toBe(400);
  });

  it('through the adapter: the chat usage carries the writes, then the reads, JSON and stream alike', async () => {
    const messages = [
      {
        role: 'system' as const,
        content: [{ type: 'text', text: textOf(1_200, 'adapter'), cache_control: { type: 'ephemeral' } }],
      },
      { role: 'user' as const, content: 'Hello' },
    ] as ChatRequest['messages'];
    const first = await provider.complete(call({ messages, reasoning_effort: 'low', max_tokens: 8_000 }));
    expect(mock.requests.at(-1)!.body.thinking).toEqual({ type: 'enabled', budget_tokens: 1_600 });
    const billed = mock.bills.at(-1)!.usage;
    expect(billed.cache_creation_input_tokens).toBe(1_200);
    expect(first.usage).toMatchObject({
      prompt_tokens: billed.input_tokens + 1_200,
      completion_tokens: billed.output_tokens,
      prompt_tokens_details: { cached_tokens: 0 },
      cache_creation_input_tokens: 1_200,
      cache_creation: { ephemeral_5m_input_tokens: 1_200, ephemeral_1h_input_tokens: 0 },
    });
    // Thinking is in the output the usage reports, not in the text.
    expect(billed.output_tokens).toBe(mockTokens(THINKING_TEXT) + mockTokens(first.choices[0]!.message.content!));
    const chunks = await collect(provider.stream(call({ messages, reasoning_effort: 'low', max_tokens: 8_000 })));
    const streamed = mock.bills.at(-1)!;
    expect(streamed.start!.cache_read_input_tokens).toBe(1_200);
    expect(chunks.at(-1)!.usage).toMatchObject({
      prompt_tokens: streamed.usage.input_tokens + 1_200,
      completion_tokens: streamed.usage.output_tokens,
      prompt_tokens_details: { cached_tokens: 1_200 },
      cache_read_input_tokens: 1_200,
      cache_creation_input_tokens: 0,
    });
  });
});
