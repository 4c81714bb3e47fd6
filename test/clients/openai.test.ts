/**
 * The official `openai` npm package against a running gateway, used exactly as its README shows with only
 * `baseURL` and `apiKey` changed: chat, streaming with usage, tools, and the contract's errors as the SDK's own
 * error classes, including a 429 that the SDK retries after the gateway's Retry-After.
 */
import OpenAI, { APIError, AuthenticationError, RateLimitError } from 'openai';
import { describe, expect, it } from 'vitest';
import {
  account,
  brokeKey,
  clientGatewayPerFile,
  credits,
  dailyLimitedKey,
  expectRetriedAfterTwoSeconds,
  gateway,
  MODEL,
  nano,
  rateLimitedKey,
  recordingFetch,
  retryAfterKey,
  UNKNOWN_KEY,
} from './support.js';

clientGatewayPerFile();

/** What a user writes: the README's client, pointed at tollgate. */
function client(apiKey: string, options: Partial<ConstructorParameters<typeof OpenAI>[0]> = {}): OpenAI {
  return new OpenAI({ baseURL: gateway.baseURL, apiKey, maxRetries: 0, ...options });
}

type UsageWithCost = OpenAI.CompletionUsage & { cost: number };

describe('openai SDK', () => {
  it('creates a completion: the echo, usage with cost, and the balance goes down by that cost', async () => {
    const before = await credits(gateway, account.key);
    const openai = client(account.key);
    const completion = await openai.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'Hello from the openai SDK' }],
    });
    expect(completion.choices[0]!.message.content).toBe('Hello from the openai SDK');
    expect(completion.choices[0]!.finish_reason).toBe('stop');
    const usage = completion.usage as UsageWithCost;
    expect(usage.prompt_tokens).toBeGreaterThan(0);
    expect(usage.completion_tokens).toBeGreaterThan(0);
    expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens);
    expect(usage.cost).toBeGreaterThan(0);
    const after = await credits(gateway, account.key);
    expect(nano(before) - nano(after)).toBe(nano(usage.cost));
  });

  it('streams chunks whose deltas join to the echo, then a usage chunk with cost', async () => {
    const openai = client(account.key);
    const stream = await openai.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'Stream this sentence back to me, word by word.' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let chunks = 0;
    let usage: UsageWithCost | undefined;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) usage = chunk.usage as UsageWithCost;
    }
    expect(text).toBe('Stream this sentence back to me, word by word.');
    expect(chunks).toBeGreaterThan(5);
    expect(usage!.completion_tokens).toBeGreaterThan(0);
    expect(usage!.total_tokens).toBe(usage!.prompt_tokens + usage!.completion_tokens);
    expect(usage!.cost).toBeGreaterThan(0);
  });

  it('calls a tool when tool_choice is "required", with arguments that parse to the schema', async () => {
    const openai = client(account.key);
    const tools: OpenAI.ChatCompletionTool[] = [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'Current weather in a city',
          parameters: {
            type: 'object',
            properties: { city: { type: 'string' }, celsius: { type: 'boolean' } },
            required: ['city'],
          },
        },
      },
    ];
    const completion = await openai.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'Paris' }],
      tools,
      tool_choice: 'required',
    });
    const choice = completion.choices[0]!;
    expect(choice.finish_reason).toBe('tool_calls');
    expect(choice.message.content).toBeNull();
    const call = choice.message.tool_calls![0]!;
    expect(call.type).toBe('function');
    if (call.type !== 'function') throw new Error('not a function call');
    expect(call.function.name).toBe('get_weather');
    expect(JSON.parse(call.function.arguments)).toEqual({ city: 'Paris', celsius: true });

    // The same, streamed: the SDK's stream helper assembles the tool call from its argument pieces.
    const runner = openai.chat.completions.stream({
      model: MODEL,
      messages: [{ role: 'user', content: 'Paris' }],
      tools,
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    });
    const final = await runner.finalChatCompletion();
    const streamed = final.choices[0]!.message.tool_calls![0]!;
    if (streamed.type !== 'function') throw new Error('not a function call');
    expect(streamed.function.name).toBe('get_weather');
    expect(JSON.parse(streamed.function.arguments)).toEqual({ city: 'Paris', celsius: true });
  });

  it('raises AuthenticationError (401) for an unknown key', async () => {
    const unknown = client(UNKNOWN_KEY);
    const error = await unknown.chat.completions
      .create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AuthenticationError);
    const auth = error as AuthenticationError;
    expect(auth.status).toBe(401);
    expect(auth.code).toBe('invalid_api_key');
    expect(auth.type).toBe('authentication_error');
    expect(auth.requestID).toMatch(/^req_/);

    // Streaming requests fail the same way, before any chunk.
    const streamError = await unknown.chat.completions
      .create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }], stream: true })
      .catch((e: unknown) => e);
    expect(streamError).toBeInstanceOf(AuthenticationError);
  });

  it('raises an APIError with status 402 and code insufficient_credits when the balance is empty', async () => {
    const openai = client(await brokeKey(gateway));
    const error = await openai.chat.completions
      .create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIError);
    const apiError = error as APIError;
    expect(apiError.status).toBe(402);
    expect(apiError.code).toBe('insufficient_credits');
    expect(apiError.type).toBe('payment_required');
    expect(apiError.message).toMatch(/^402 /);
  });

  it('raises RateLimitError (429) with the Retry-After header when retries are off', async () => {
    const key = await rateLimitedKey(gateway);
    const { fetch, seen } = recordingFetch();
    const openai = client(key, { maxRetries: 0, fetch });
    const error = await openai.chat.completions
      .create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitError);
    const limited = error as RateLimitError;
    expect(limited.status).toBe(429);
    expect(limited.code).toBe('rate_limit_exceeded');
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect((limited.error as { retry_after?: number }).retry_after).toBe(retryAfter);
    expect(seen.map((s) => s.status)).toEqual([429]);
  });

  it('does not retry daily_limit_exceeded (Retry-After = hours until midnight UTC), even with retries on', async () => {
    const key = await dailyLimitedKey(gateway);
    const { fetch, seen } = recordingFetch();
    // Default maxRetries (2): without the gateway's `x-should-retry: false` the SDK would sleep until midnight.
    const openai = new OpenAI({ baseURL: gateway.baseURL, apiKey: key, fetch });
    const error = await openai.chat.completions
      .create({ model: MODEL, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitError);
    const limited = error as RateLimitError;
    expect(limited.code).toBe('daily_limit_exceeded');
    expect(limited.headers.get('x-should-retry')).toBe('false');
    expect(Number(limited.headers.get('retry-after'))).toBe((limited.error as { retry_after: number }).retry_after);
    expect(seen.map((s) => s.status)).toEqual([429]);
  });

  it('retries a 429 after the Retry-After the gateway sent, then succeeds (maxRetries: 2)', async () => {
    const { key, onResponse } = await retryAfterKey(gateway);
    const { fetch, seen } = recordingFetch(onResponse);
    const openai = client(key, { maxRetries: 2, fetch });
    const completion = await openai.chat.completions.create({
      model: MODEL,
      messages: [{ role: 'user', content: 'worth the wait' }],
    });
    expect(completion.choices[0]!.message.content).toBe('worth the wait');
    expectRetriedAfterTwoSeconds(seen);
  });
});
