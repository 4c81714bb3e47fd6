/**
 * Anthropic's official SDK (`@anthropic-ai/sdk`, what Claude Code is built on) pointed at a running gateway with
 * only the base URL and key changed: messages.create, messages.stream, countTokens, tool-use round trips (natively
 * to a local server speaking Anthropic's Messages API, and translated to one speaking OpenAI's chat), the SDK's
 * own error classes, and the model list in Anthropic's shape. Each answer is billed exactly what it says it cost.
 */
import Anthropic, {
  APIError,
  AuthenticationError,
  PaymentRequiredError,
  PermissionDeniedError,
  RateLimitError,
} from '@anthropic-ai/sdk';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../src/config/index.js';
import { CLAUDE_CODE_BETAS, CLAUDE_CODE_PROMPT, claudeCodeBody } from '../support/claude-code.js';
import { startGateway } from '../support/gateway.js';
import { ANTHROPIC_TEXT, startMockAnthropic, type MockAnthropic } from '../support/mock-anthropic.js';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.js';
import {
  ClockedLimiter,
  UNKNOWN_KEY,
  brokeKey,
  credits,
  expectRetriedAfterTwoSeconds,
  nano,
  rateLimitedKey,
  recordingFetch,
  retryAfterKey,
  type ClientGateway,
} from './support.js';

const CLAUDE = 'claude-haiku-5-5';
const GPT = 'gpt-6-luna';
const SANDBOX = 'sandbox/echo';
const UNNAMED: ModelConfig = {
  id: 'acme-chat-2-1-20250101',
  provider: 'sandbox',
  upstream_model: 'echo',
  pricing: { prompt: 0.001, completion: 0.002 },
  context_length: 8_000,
  max_tokens: 1_000,
  capabilities: {
    chat: true,
    completion: false,
    function_calling: true,
    vision: false,
    embeddings: false,
    json_mode: true,
  },
  created: 1700000000,
};

let gateway: ClientGateway;
let anthropicUpstream: MockAnthropic;
let openaiUpstream: MockOpenAI;
let account: { id: string; key: string };

beforeAll(async () => {
  anthropicUpstream = await startMockAnthropic({ apiKey: 'sk-ant-sdk' });
  openaiUpstream = await startMockOpenAI({ apiKey: 'sk-oai-sdk' });
  const limiter = new ClockedLimiter();
  const started = await startGateway({
    limiter,
    overrides: { models: [UNNAMED] },
    env: {
      ANTHROPIC_API_KEY: 'sk-ant-sdk',
      ANTHROPIC_BASE_URL: anthropicUpstream.url,
      OPENAI_API_KEY: 'sk-oai-sdk',
      OPENAI_BASE_URL: openaiUpstream.url,
    },
  });
  gateway = Object.assign(started, { limiter });
  account = await gateway.account();
});
afterAll(async () => {
  await gateway?.close();
  await Promise.all([anthropicUpstream?.close(), openaiUpstream?.close()]);
});
afterEach(() => {
  gateway.limiter.reset();
  anthropicUpstream.setBehavior({ kind: 'ok' });
  openaiUpstream.setBehavior({ kind: 'ok' });
});

function client(apiKey: string, options: Partial<ConstructorParameters<typeof Anthropic>[0]> = {}): Anthropic {
  return new Anthropic({ baseURL: gateway.url, apiKey, maxRetries: 0, ...options });
}

const textOf = (content: ReadonlyArray<{ type: string }>) =>
  content.map((block) => ('text' in block && typeof block.text === 'string' ? block.text : '')).join('');

const WEATHER: Anthropic.Tool = {
  name: 'get_weather',
  description: 'The weather in a city',
  input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
};

describe('@anthropic-ai/sdk against tollgate', () => {
  it('messages.create: a Message with usage; the balance falls by exactly x-tollgate-cost', async () => {
    const before = await credits(gateway, account.key);
    const { data: message, response } = await client(account.key)
      .messages.create({
        model: SANDBOX,
        max_tokens: 200,
        system: 'You are terse.',
        messages: [{ role: 'user', content: 'Say hello' }],
      })
      .withResponse();
    expect(message.type).toBe('message');
    expect(message.role).toBe('assistant');
    expect(message.model).toBe(SANDBOX);
    expect(message.id).toMatch(/^msg_/);
    expect(textOf(message.content).length).toBeGreaterThan(0);
    expect(message.stop_reason).toBe('end_turn');
    expect(message.usage.input_tokens).toBeGreaterThan(0);
    expect(message.usage.output_tokens).toBeGreaterThan(0);
    expect(response.headers.get('request-id')).toBeTruthy();
    const cost = Number(response.headers.get('x-tollgate-cost'));
    expect(cost).toBeGreaterThan(0);
    expect((message.usage as { cost?: number }).cost).toBe(cost);
    const after = await credits(gateway, account.key);
    expect(nano(before) - nano(after)).toBe(nano(cost));
  });

  it('messages.create natively to Anthropic: usage.cost is what was charged, as on a translated answer', async () => {
    const before = await credits(gateway, account.key);
    const { data: message, response } = await client(account.key)
      .messages.create({ model: CLAUDE, max_tokens: 200, messages: [{ role: 'user', content: 'Say hello' }] })
      .withResponse();
    const cost = (message.usage as { cost?: number }).cost;
    expect(cost).toBeGreaterThan(0);
    expect(cost).toBe(Number(response.headers.get('x-tollgate-cost')));
    expect(nano(before) - nano(await credits(gateway, account.key))).toBe(nano(cost!));
  });

  it('messages.stream: text events add up to finalMessage; message_delta carries the cost that was charged', async () => {
    const before = await credits(gateway, account.key);
    const stream = client(account.key).messages.stream({
      model: SANDBOX,
      max_tokens: 200,
      messages: [{ role: 'user', content: 'Tell me about streams' }],
    });
    let text = '';
    let cost: number | undefined;
    stream.on('text', (delta) => (text += delta));
    stream.on('streamEvent', (event) => {
      if (event.type === 'message_delta') cost = (event.usage as { cost?: number }).cost;
    });
    const final = await stream.finalMessage();
    expect(text.length).toBeGreaterThan(0);
    expect(textOf(final.content)).toBe(text);
    expect(final.stop_reason).toBe('end_turn');
    expect(final.usage.output_tokens).toBeGreaterThan(0);
    // finalMessage() keeps only Anthropic's own usage fields; the cost is read from message_delta (docs/clients.md).
    expect(final.usage).not.toHaveProperty('cost');
    expect(cost).toBeGreaterThan(0);
    const after = await credits(gateway, account.key);
    expect(nano(before) - nano(after)).toBe(nano(cost!));
  });

  it('messages.countTokens: the prompt counted, nothing charged', async () => {
    const before = await credits(gateway, account.key);
    const counted = await client(account.key).messages.countTokens({
      model: CLAUDE,
      system: 'You are terse.',
      messages: [{ role: 'user', content: 'How many tokens is this sentence?' }],
      tools: [WEATHER],
    });
    expect(counted.input_tokens).toBeGreaterThan(20);
    expect(await credits(gateway, account.key)).toBe(before);
  });

  it('a tool-use round trip, natively to Anthropic: tool_use ids and the tool_result go upstream unchanged', async () => {
    const anthropic = client(account.key);
    anthropicUpstream.enqueue({
      kind: 'ok',
      tools: [{ name: 'get_weather', input: { city: 'Paris' }, id: 'toolu_01' }],
    });
    const first = await anthropic.messages.create({
      model: CLAUDE,
      max_tokens: 300,
      tools: [WEATHER],
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
    });
    expect(first.stop_reason).toBe('tool_use');
    const call = first.content.find((block) => block.type === 'tool_use');
    expect(call).toMatchObject({ id: 'toolu_01', name: 'get_weather', input: { city: 'Paris' } });
    anthropicUpstream.enqueue({ kind: 'ok', text: 'Sunny, 21 degrees.' });
    const second = await anthropic.messages.create({
      model: CLAUDE,
      max_tokens: 300,
      tools: [WEATHER],
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: first.content },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 'toolu_01',
              content: 'sunny, 21C',
              cache_control: { type: 'ephemeral' },
            },
          ],
        },
      ],
    });
    expect(textOf(second.content)).toBe('Sunny, 21 degrees.');
    expect(second.model).toBe(CLAUDE);
    const sent = anthropicUpstream.requests.at(-1)!.body;
    expect(sent.model).toBe(CLAUDE);
    // The client's blocks as they were sent: cache_control survives only a native pass-through.
    expect(sent.messages[2].content[0]).toEqual({
      type: 'tool_result',
      tool_use_id: 'toolu_01',
      content: 'sunny, 21C',
      cache_control: { type: 'ephemeral' },
    });
    expect(sent.messages[1].content).toEqual(first.content);
  });

  it('a tool-use round trip, translated to an OpenAI-compatible upstream, streamed', async () => {
    const anthropic = client(account.key);
    openaiUpstream.enqueue({
      kind: 'ok',
      toolCalls: [{ name: 'get_weather', arguments: '{"city":"Oslo"}', id: 'call_7' }],
    });
    const first = await anthropic.messages
      .stream({ model: GPT, max_tokens: 300, tools: [WEATHER], messages: [{ role: 'user', content: 'Oslo?' }] })
      .finalMessage();
    expect(first.stop_reason).toBe('tool_use');
    expect(first.content).toEqual([{ type: 'tool_use', id: 'call_7', name: 'get_weather', input: { city: 'Oslo' } }]);
    openaiUpstream.enqueue({ kind: 'ok', content: 'Cold in Oslo.' });
    const second = await anthropic.messages.create({
      model: GPT,
      max_tokens: 300,
      tools: [WEATHER],
      messages: [
        { role: 'user', content: 'Oslo?' },
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_7', content: '-3C' }] },
      ],
    });
    expect(textOf(second.content)).toBe('Cold in Oslo.');
    const sent = openaiUpstream.requests.at(-1)!.body;
    expect(sent.tools[0].function).toMatchObject({ name: 'get_weather', parameters: WEATHER.input_schema });
    expect(sent.messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_7', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_7', content: '-3C' },
    ]);
  });

  it('client.beta.messages, as Claude Code calls it (`?beta=true`, `anthropic-beta`): streamed and counted', async () => {
    const anthropic = client(account.key);
    const final = await anthropic.beta.messages
      .stream({
        model: CLAUDE,
        max_tokens: 300,
        betas: ['interleaved-thinking-2025-05-14'],
        system: [{ type: 'text', text: 'You are Claude Code.', cache_control: { type: 'ephemeral' } }],
        messages: [{ role: 'user', content: [{ type: 'text', text: 'hi', cache_control: { type: 'ephemeral' } }] }],
      })
      .finalMessage();
    expect(textOf(final.content)).toBe(ANTHROPIC_TEXT);
    expect(anthropicUpstream.requests.at(-1)!.body.system[0].cache_control).toEqual({ type: 'ephemeral' });
    const counted = await anthropic.beta.messages.countTokens({
      model: CLAUDE,
      betas: ['interleaved-thinking-2025-05-14'],
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(counted.input_tokens).toBeGreaterThan(0);
  });

  it("Claude Code's request through the SDK on a test key: the sandbox answers it, translated, at cost 0", async () => {
    const { id } = account;
    const { body } = await gateway.admin('POST', `/admin/accounts/${id}/keys`, { environment: 'test' });
    const { stream: _stream, ...request } = claudeCodeBody('claude-sonnet-5-5');
    // The SDK's types predate some of Claude Code's betas (a system turn mid-conversation).
    const params: any = { ...request, betas: CLAUDE_CODE_BETAS };
    const before = await credits(gateway, account.key);
    const final = await client(body.key).beta.messages.stream(params).finalMessage();
    expect(textOf(final.content)).toContain(CLAUDE_CODE_PROMPT);
    expect(final.usage.input_tokens).toBeGreaterThan(0);
    expect(await credits(gateway, account.key)).toBe(before);
  });

  it('a translated upstream failing mid-stream ends the stream with an `error` event that the SDK raises', async () => {
    const before = await credits(gateway, account.key);
    openaiUpstream.enqueue({ kind: 'stream-error', afterChunks: 3, message: 'upstream fell over' });
    const stream = client(account.key).messages.stream({
      model: GPT,
      max_tokens: 300,
      messages: [{ role: 'user', content: 'Go' }],
    });
    let text = '';
    stream.on('text', (delta) => (text += delta));
    const failure = await stream.finalMessage().catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(APIError);
    expect(text.length).toBeGreaterThan(0);
    // The prompt and what was delivered are charged.
    expect(await credits(gateway, account.key)).toBeLessThan(before);
  });

  it('its error classes: 401, 402 (billing_error), 403 for a model the key may not use', async () => {
    const request = { model: SANDBOX, max_tokens: 50, messages: [{ role: 'user' as const, content: 'hi' }] };
    const unknown = await client(UNKNOWN_KEY)
      .messages.create(request)
      .catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(AuthenticationError);
    expect((unknown as AuthenticationError).error).toMatchObject({
      type: 'error',
      error: { type: 'authentication_error' },
    });

    const broke = await client(await brokeKey(gateway))
      .messages.create(request)
      .catch((e: unknown) => e);
    expect(broke).toBeInstanceOf(PaymentRequiredError);
    expect((broke as PaymentRequiredError).status).toBe(402);
    expect((broke as PaymentRequiredError).error).toMatchObject({ type: 'error', error: { type: 'billing_error' } });

    const limited = await gateway.key(account.id, { permissions: 'project', models: [GPT] });
    const refused = await client(limited.key)
      .messages.create(request)
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(PermissionDeniedError);
    expect((refused as PermissionDeniedError).error).toMatchObject({ error: { type: 'permission_error' } });
  });

  it('429 is a RateLimitError with retry-after, which the SDK honours when it retries', async () => {
    const refused = await client(await rateLimitedKey(gateway))
      .messages.create({ model: SANDBOX, max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RateLimitError);
    expect(Number((refused as RateLimitError).headers.get('retry-after'))).toBeGreaterThan(0);
    expect((refused as RateLimitError).error).toMatchObject({ error: { type: 'rate_limit_error' } });

    const retried = await retryAfterKey(gateway);
    const { fetch, seen } = recordingFetch(retried.onResponse);
    const message = await client(retried.key, { maxRetries: 1, fetch }).messages.create({
      model: SANDBOX,
      max_tokens: 20,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(message.type).toBe('message');
    expectRetriedAfterTwoSeconds(seen);
  });

  it('models.list() and models.retrieve() answer in Anthropic shape when the request carries anthropic-version', async () => {
    const models = [];
    for await (const model of client(account.key).models.list()) models.push(model);
    const claude = models.find((model) => model.id === CLAUDE);
    expect(claude).toMatchObject({ type: 'model', id: CLAUDE, display_name: 'Claude Haiku 5.5' });
    // A model configured without a `name` gets one read from its id.
    expect(models.find((model) => model.id === UNNAMED.id)?.display_name).toBe('Acme Chat 2.1');
    expect(new Date(claude!.created_at).getTime()).toBeGreaterThan(0);
    expect(models.some((model) => model.id === 'sandbox/embed')).toBe(false);
    const one = await client(account.key).models.retrieve(CLAUDE);
    expect(one).toEqual(claude);
  });
});
