/**
 * LangChain JS (`@langchain/openai` ChatOpenAI) against a running gateway: `configuration.baseURL` and `apiKey`
 * are all it takes. invoke, stream (usage arrives as usage_metadata), bindTools with a zod schema, and the
 * contract's errors surfacing as the openai SDK's error classes (LangChain wraps that SDK) with their status.
 */
import { ChatOpenAI } from '@langchain/openai';
import { tool } from '@langchain/core/tools';
import type { AIMessageChunk } from '@langchain/core/messages';
import { APIError, AuthenticationError, RateLimitError } from 'openai';
import { z } from 'zod';
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

function chatModel(apiKey: string, options: { maxRetries?: number; fetch?: typeof fetch } = {}): ChatOpenAI {
  return new ChatOpenAI({
    model: MODEL,
    apiKey,
    configuration: { baseURL: gateway.baseURL, ...(options.fetch ? { fetch: options.fetch } : {}) },
    maxRetries: options.maxRetries ?? 0,
  });
}

const getWeather = tool(({ city }) => Promise.resolve(`It is sunny in ${city}.`), {
  name: 'get_weather',
  description: 'Current weather in a city',
  schema: z.object({ city: z.string().describe('City name'), days: z.number().int() }),
});

describe('LangChain ChatOpenAI', () => {
  it('invokes: the echo as content, token usage, and the balance goes down by usage.cost', async () => {
    const before = await credits(gateway, account.key);
    const message = await chatModel(account.key).invoke('Hello from LangChain');
    expect(message.content).toBe('Hello from LangChain');
    expect(message.usage_metadata?.input_tokens).toBeGreaterThan(0);
    expect(message.usage_metadata?.output_tokens).toBeGreaterThan(0);
    expect(message.usage_metadata?.total_tokens).toBe(
      message.usage_metadata!.input_tokens + message.usage_metadata!.output_tokens,
    );
    expect(message.response_metadata.finish_reason).toBe('stop');
    // The gateway's usage object, cost included, is kept as-is in response_metadata.usage.
    const cost = (message.response_metadata.usage as { cost: number }).cost;
    expect(cost).toBeGreaterThan(0);
    const after = await credits(gateway, account.key);
    expect(nano(before) - nano(after)).toBe(nano(cost));
  });

  it('streams: chunks concatenate to the echo and the last carries usage_metadata', async () => {
    const stream = await chatModel(account.key).stream([
      ['system', 'You repeat what you are told.'],
      ['human', 'Streaming through LangChain works fine.'],
    ]);
    let full: AIMessageChunk | undefined;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      full = full ? full.concat(chunk) : chunk;
    }
    expect(chunks).toBeGreaterThan(3);
    expect(full!.content).toBe('Streaming through LangChain works fine.');
    expect(full!.usage_metadata?.output_tokens).toBeGreaterThan(0);
    expect(full!.usage_metadata?.input_tokens).toBeGreaterThan(0);
    expect((full!.response_metadata.usage as { cost: number }).cost).toBeGreaterThan(0);
  });

  it('binds a zod tool with tool_choice "required" and gets a parsed tool call (invoke and stream)', async () => {
    const model = chatModel(account.key).bindTools([getWeather], { tool_choice: 'required' });
    const message = await model.invoke('Lisbon');
    expect(message.tool_calls).toHaveLength(1);
    expect(message.tool_calls![0]).toMatchObject({
      name: 'get_weather',
      args: { city: 'Lisbon', days: 1 },
      type: 'tool_call',
    });
    expect(message.tool_calls![0]!.id).toMatch(/^call_/);

    // The tool runs on the call as LangChain hands it over.
    const result = await getWeather.invoke(message.tool_calls![0]!);
    expect(result.content).toBe('It is sunny in Lisbon.');

    let full: AIMessageChunk | undefined;
    for await (const chunk of await model.stream('Lisbon')) full = full ? full.concat(chunk) : chunk;
    expect(full!.tool_calls).toEqual([
      expect.objectContaining({ name: 'get_weather', args: { city: 'Lisbon', days: 1 } }),
    ]);
  });

  it('surfaces 401 as AuthenticationError, 402 as APIError (insufficient_credits), 429 as RateLimitError', async () => {
    const ask = (key: string) =>
      chatModel(key)
        .invoke('hi')
        .catch((e: unknown) => e);

    const unauthorized = await ask(UNKNOWN_KEY);
    expect(unauthorized).toBeInstanceOf(AuthenticationError);
    expect(unauthorized).toMatchObject({ status: 401, code: 'invalid_api_key', lc_error_code: 'MODEL_AUTHENTICATION' });

    const payment = await ask(await brokeKey(gateway));
    expect(payment).toBeInstanceOf(APIError);
    expect(payment).toMatchObject({ status: 402, code: 'insufficient_credits', type: 'payment_required' });

    const limited = await ask(await rateLimitedKey(gateway));
    expect(limited).toBeInstanceOf(RateLimitError);
    expect(limited).toMatchObject({ status: 429, code: 'rate_limit_exceeded', lc_error_code: 'MODEL_RATE_LIMIT' });
    expect(Number((limited as APIError).headers?.get('retry-after'))).toBeGreaterThanOrEqual(1);

    // A stream fails the same way.
    const streamed = await chatModel(UNKNOWN_KEY)
      .stream('hi')
      .then(async (stream) => {
        for await (const _ of stream);
      })
      .catch((e: unknown) => e);
    expect(streamed).toMatchObject({ status: 401 });
  });

  it('gives up at once on daily_limit_exceeded (Retry-After of hours), even with retries on', async () => {
    const key = await dailyLimitedKey(gateway);
    const { fetch, seen } = recordingFetch();
    const error = await chatModel(key, { maxRetries: 6, fetch })
      .invoke('hi')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitError);
    expect(error).toMatchObject({
      status: 429,
      code: 'daily_limit_exceeded',
      rateLimitReason: 'retry_after_too_large',
    });
    expect(seen).toHaveLength(1);
  });

  it('retries a 429 after the Retry-After the gateway sent (maxRetries: 2)', async () => {
    const { key, onResponse } = await retryAfterKey(gateway);
    const { fetch, seen } = recordingFetch(onResponse);
    const message = await chatModel(key, { maxRetries: 2, fetch }).invoke('worth the wait');
    expect(message.content).toBe('worth the wait');
    expectRetriedAfterTwoSeconds(seen);
  });
});
