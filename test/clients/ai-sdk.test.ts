/**
 * The Vercel AI SDK (`ai` + `@ai-sdk/openai-compatible`) against a running gateway: generateText, streamText
 * (text and usage), tool calling with zod and JSON schemas, and the contract's errors as APICallError with the
 * HTTP status; a 429 is retried after the gateway's Retry-After.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { APICallError, generateText, jsonSchema, streamText, tool } from 'ai';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import {
  account,
  brokeKey,
  clientGatewayPerFile,
  credits,
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

function tollgate(apiKey: string, fetch?: typeof globalThis.fetch) {
  return createOpenAICompatible({
    name: 'tollgate',
    baseURL: gateway.baseURL,
    apiKey,
    includeUsage: true,
    ...(fetch ? { fetch } : {}),
  });
}

/** The gateway's usage object (with `cost`) as the SDK keeps it. */
const costOf = (usage: { raw?: unknown }): number => (usage.raw as { cost: number }).cost;

async function apiCallError(run: () => Promise<unknown>): Promise<APICallError> {
  const error = await run().then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!APICallError.isInstance(error)) throw new Error(`expected an APICallError, got ${String(error)}`);
  return error;
}

describe('Vercel AI SDK with @ai-sdk/openai-compatible', () => {
  it('generateText: the echo, usage, and the balance goes down by the cost', async () => {
    const before = await credits(gateway, account.key);
    const { text, usage, finishReason } = await generateText({
      model: tollgate(account.key)(MODEL),
      prompt: 'Hello from the AI SDK',
    });
    expect(text).toBe('Hello from the AI SDK');
    expect(finishReason).toBe('stop');
    expect(usage.inputTokens).toBeGreaterThan(0);
    expect(usage.outputTokens).toBeGreaterThan(0);
    expect(usage.totalTokens).toBe(usage.inputTokens! + usage.outputTokens!);
    const after = await credits(gateway, account.key);
    expect(nano(before) - nano(after)).toBe(nano(costOf(usage)));
  });

  it('streamText: text deltas join to the echo; usage arrives at the end (includeUsage)', async () => {
    const result = streamText({
      model: tollgate(account.key)(MODEL),
      system: 'Repeat the user.',
      prompt: 'The AI SDK streams through tollgate.',
      maxRetries: 0,
    });
    const deltas: string[] = [];
    for await (const delta of result.textStream) deltas.push(delta);
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.join('')).toBe('The AI SDK streams through tollgate.');
    const usage = await result.usage;
    expect(usage.inputTokens).toBeGreaterThan(0);
    expect(usage.outputTokens).toBeGreaterThan(0);
    expect(costOf(usage)).toBeGreaterThan(0);
    expect(await result.finishReason).toBe('stop');
  });

  it('calls a tool (zod inputSchema, toolChoice "required") and runs it', async () => {
    const weather = tool({
      description: 'Current weather in a city',
      inputSchema: z.object({ city: z.string(), days: z.number().int() }),
      execute: ({ city, days }) => Promise.resolve(`Sunny in ${city} for ${days} day(s).`),
    });
    const result = await generateText({
      model: tollgate(account.key)(MODEL),
      prompt: 'Oslo',
      tools: { weather },
      toolChoice: 'required',
    });
    expect(result.finishReason).toBe('tool-calls');
    expect(result.toolCalls).toHaveLength(1);
    expect(result.toolCalls[0]).toMatchObject({ toolName: 'weather', input: { city: 'Oslo', days: 1 } });
    expect(result.toolResults[0]).toMatchObject({ toolName: 'weather', output: 'Sunny in Oslo for 1 day(s).' });
  });

  it('streams a tool call (jsonSchema inputSchema, a named toolChoice)', async () => {
    const result = streamText({
      model: tollgate(account.key)(MODEL),
      prompt: 'Kyoto',
      tools: {
        lookup: tool({
          description: 'Look a place up',
          inputSchema: jsonSchema<{ place: string; exact: boolean }>({
            type: 'object',
            properties: { place: { type: 'string' }, exact: { type: 'boolean' } },
            required: ['place', 'exact'],
          }),
        }),
      },
      toolChoice: { type: 'tool', toolName: 'lookup' },
    });
    const calls = await result.toolCalls;
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ toolName: 'lookup', input: { place: 'Kyoto', exact: true } });
    expect(await result.finishReason).toBe('tool-calls');
  });

  it('throws APICallError with statusCode 401, 402 and 429 (retries off)', async () => {
    const ask = (apiKey: string) => () => generateText({ model: tollgate(apiKey)(MODEL), prompt: 'hi', maxRetries: 0 });

    const unauthorized = await apiCallError(ask(UNKNOWN_KEY));
    expect(unauthorized.statusCode).toBe(401);
    expect(unauthorized.isRetryable).toBe(false);
    expect(JSON.parse(unauthorized.responseBody!).error.code).toBe('invalid_api_key');

    const payment = await apiCallError(ask(await brokeKey(gateway)));
    expect(payment.statusCode).toBe(402);
    expect(payment.isRetryable).toBe(false);
    expect(JSON.parse(payment.responseBody!).error.code).toBe('insufficient_credits');

    const limited = await apiCallError(ask(await rateLimitedKey(gateway)));
    expect(limited.statusCode).toBe(429);
    expect(limited.isRetryable).toBe(true);
    const body = JSON.parse(limited.responseBody!);
    expect(body.error.code).toBe('rate_limit_exceeded');
    expect(limited.responseHeaders?.['retry-after']).toBe(String(body.error.retry_after));
  });

  it('streamText reports a failed request to onError as an APICallError', async () => {
    const errors: unknown[] = [];
    const result = streamText({
      model: tollgate(UNKNOWN_KEY)(MODEL),
      prompt: 'hi',
      maxRetries: 0,
      onError: ({ error }) => void errors.push(error),
    });
    const deltas: string[] = [];
    for await (const delta of result.textStream) deltas.push(delta);
    expect(deltas).toEqual([]);
    expect(errors).toHaveLength(1);
    expect(APICallError.isInstance(errors[0])).toBe(true);
    expect((errors[0] as APICallError).statusCode).toBe(401);
  });

  it('retries a 429 after the Retry-After the gateway sent (maxRetries: 2)', async () => {
    const { key, onResponse } = await retryAfterKey(gateway);
    const { fetch, seen } = recordingFetch(onResponse);
    const { text } = await generateText({
      model: tollgate(key, fetch)(MODEL),
      prompt: 'worth the wait',
      maxRetries: 2,
    });
    expect(text).toBe('worth the wait');
    expectRetriedAfterTwoSeconds(seen);
  });
});
