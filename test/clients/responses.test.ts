/**
 * The official `openai` package's Responses API (`client.responses.create`) against a running gateway, with only
 * `baseURL` and `apiKey` changed: a model served by an OpenAI-compatible server that is not OpenAI (translated
 * through chat), with and without streaming, a function-call round trip, `text.format` with a JSON schema, the
 * balance going down by exactly `usage.cost`, test keys answered by the sandbox, and the contract's errors as the
 * SDK's own error classes.
 */
import OpenAI, { APIError, AuthenticationError, PermissionDeniedError, RateLimitError } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { startMockOpenAI, type Behavior, type MockOpenAI } from '../support/mock-openai.js';
import { brokeKey, credits, nano, rateLimitedKey, UNKNOWN_KEY } from './support.js';

const MODEL = 'mistral-small-2603';
const WEATHER_TOOL = {
  type: 'function' as const,
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  },
  strict: true,
};

let gateway: TestGateway;
let mistral: MockOpenAI;
let openaiUpstream: MockOpenAI;
let account: { id: string; key: string };

/** A chat server that calls get_weather first, and answers from the tool's output once it has it. */
function weather(body: any): Behavior | undefined {
  if (!body.tools) return undefined;
  const last = body.messages.at(-1);
  if (last.role === 'tool') return { kind: 'ok', content: `It is ${JSON.parse(last.content).sky} in Paris.` };
  return { kind: 'ok', toolCalls: [{ id: 'call_w1', name: 'get_weather', arguments: '{"city":"Paris"}' }] };
}

beforeAll(async () => {
  mistral = await startMockOpenAI({ apiKey: 'mk-clients', route: weather });
  openaiUpstream = await startMockOpenAI({ apiKey: 'sk-clients' });
  gateway = await startGateway({
    env: {
      MISTRAL_API_KEY: 'mk-clients',
      MISTRAL_BASE_URL: mistral.url,
      OPENAI_API_KEY: 'sk-clients',
      OPENAI_BASE_URL: openaiUpstream.url,
    },
  });
  account = await gateway.account();
});
afterAll(async () => {
  await gateway?.close();
  await Promise.all([mistral?.close(), openaiUpstream?.close()]);
});

function client(apiKey: string): OpenAI {
  return new OpenAI({ baseURL: gateway.baseURL, apiKey, maxRetries: 0 });
}

type UsageWithCost = OpenAI.Responses.ResponseUsage & { cost: number };

describe('openai SDK: responses.create', () => {
  it('answers a string input through chat; the balance goes down by exactly usage.cost', async () => {
    const before = await credits(gateway, account.key);
    mistral.enqueue({ kind: 'ok', content: 'Bonjour from Mistral.' });
    const response = await client(account.key).responses.create({
      model: MODEL,
      instructions: 'Answer in one line',
      input: 'Say hello',
      max_output_tokens: 50,
    });
    expect(response.output_text).toBe('Bonjour from Mistral.');
    expect(response).toMatchObject({ object: 'response', status: 'completed', model: MODEL });
    const sent = mistral.requests.at(-1)!.body;
    expect(sent.messages).toEqual([
      { role: 'system', content: 'Answer in one line' },
      { role: 'user', content: 'Say hello' },
    ]);
    expect(sent.max_tokens).toBe(50);
    const usage = response.usage as UsageWithCost;
    expect(usage.total_tokens).toBe(usage.input_tokens + usage.output_tokens);
    expect(usage.cost).toBeGreaterThan(0);
    expect(nano(before) - nano(await credits(gateway, account.key))).toBe(nano(usage.cost));
  });

  it('streams typed events whose deltas join to the answer, then response.completed with usage and cost', async () => {
    const before = await credits(gateway, account.key);
    mistral.enqueue({ kind: 'ok', content: 'One two three four.' });
    const stream = await client(account.key).responses.create({ model: MODEL, input: 'Count', stream: true });
    const types: string[] = [];
    let text = '';
    let completed: OpenAI.Responses.Response | undefined;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') text += event.delta;
      if (event.type === 'response.completed') completed = event.response;
    }
    expect(text).toBe('One two three four.');
    expect(types.slice(0, 4)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
    ]);
    expect(types.slice(-4)).toEqual([
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(completed!.output).toMatchObject([{ type: 'message', content: [{ text: 'One two three four.' }] }]);
    const usage = completed!.usage as UsageWithCost;
    expect(usage.output_tokens).toBe(4);
    expect(nano(before) - nano(await credits(gateway, account.key))).toBe(nano(usage.cost));
  });

  it("responses.stream() (the SDK's accumulating helper) rebuilds the final Response from the events", async () => {
    mistral.enqueue({ kind: 'ok', content: 'Built from events.' });
    const final = await client(account.key).responses.stream({ model: MODEL, input: 'Go' }).finalResponse();
    expect(final.output_text).toBe('Built from events.');
    expect(final.status).toBe('completed');
  });

  it('an OpenAI model goes through natively: create, then stream with previous_response_id, billed exactly', async () => {
    const before = await credits(gateway, account.key);
    const openai = client(account.key);
    const first = await openai.responses.create({ model: 'gpt-6-luna', input: 'Hello' });
    expect(first.output_text).toBe('Hello from the mock upstream.');
    expect(openaiUpstream.requests.at(-1)!.path).toBe('/v1/responses');
    const final = await openai.responses
      .stream({ model: 'gpt-6-luna', input: 'Again', previous_response_id: first.id })
      .finalResponse();
    expect(final.output_text).toBe('Hello from the mock upstream.');
    expect(openaiUpstream.requests.at(-1)!.body.previous_response_id).toBe(first.id);
    const spent = [first, final].reduce((sum, r) => sum + nano((r.usage as UsageWithCost).cost), 0);
    expect(nano(before) - nano(await credits(gateway, account.key))).toBe(spent);
  });

  it('a function-call round trip: function_call, then function_call_output, then the answer', async () => {
    const openai = client(account.key);
    const first = await openai.responses.create({ model: MODEL, input: 'Weather in Paris?', tools: [WEATHER_TOOL] });
    const call = first.output.find((item) => item.type === 'function_call');
    if (call?.type !== 'function_call') throw new Error('no function call');
    expect(call).toMatchObject({ name: 'get_weather', call_id: 'call_w1' });
    expect(JSON.parse(call.arguments)).toEqual({ city: 'Paris' });
    expect(mistral.requests.at(-1)!.body.tools[0]).toEqual({
      type: 'function',
      function: {
        name: 'get_weather',
        description: 'The weather in a city',
        parameters: WEATHER_TOOL.parameters,
        strict: true,
      },
    });

    const second = await openai.responses.create({
      model: MODEL,
      tools: [WEATHER_TOOL],
      input: [
        { role: 'user', content: 'Weather in Paris?' },
        call,
        { type: 'function_call_output', call_id: call.call_id, output: JSON.stringify({ sky: 'sunny' }) },
      ],
    });
    expect(second.output_text).toBe('It is sunny in Paris.');
    const messages = mistral.requests.at(-1)!.body.messages;
    expect(messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_w1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_w1', content: '{"sky":"sunny"}' },
    ]);
  });

  it('streams a function call as its arguments events', async () => {
    const stream = await client(account.key).responses.create({
      model: MODEL,
      input: 'Weather?',
      tools: [WEATHER_TOOL],
      stream: true,
    });
    let done: OpenAI.Responses.ResponseFunctionCallArgumentsDoneEvent | undefined;
    let added: OpenAI.Responses.ResponseOutputItemAddedEvent | undefined;
    for await (const event of stream) {
      if (event.type === 'response.function_call_arguments.done') done = event;
      if (event.type === 'response.output_item.added') added = event;
    }
    expect(added!.item).toMatchObject({ type: 'function_call', name: 'get_weather', call_id: 'call_w1' });
    expect(JSON.parse(done!.arguments)).toEqual({ city: 'Paris' });
  });

  it('text.format json_schema goes upstream as chat response_format', async () => {
    mistral.enqueue({ kind: 'ok', content: '{"city":"Paris"}' });
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    const response = await client(account.key).responses.create({
      model: MODEL,
      input: 'Which city?',
      text: { format: { type: 'json_schema', name: 'city', schema, strict: true } },
    });
    expect(JSON.parse(response.output_text)).toEqual({ city: 'Paris' });
    expect(mistral.requests.at(-1)!.body.response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'city', schema, strict: true },
    });
  });

  it('a test key is answered by the sandbox at no cost', async () => {
    const testKey = await gateway.key(account.id, { environment: 'test' });
    const sent = mistral.requests.length;
    const response = await client(testKey.key).responses.create({ model: MODEL, input: 'echo me' });
    expect(response.output_text.length).toBeGreaterThan(0);
    expect((response.usage as UsageWithCost).cost).toBe(0);
    expect(mistral.requests.length).toBe(sent);
  });

  it('a hosted tool on a translated model is left out (as Codex adds web_search), unless tool_choice forces it', async () => {
    mistral.enqueue({ kind: 'ok', content: 'No search needed.' });
    const response = await client(account.key).responses.create({
      model: MODEL,
      input: 'x',
      tools: [{ type: 'web_search' }],
    });
    expect(response.output_text).toBe('No search needed.');
    expect(mistral.requests.at(-1)!.body.tools).toBeUndefined();
    const forced = await client(account.key)
      .responses.create({
        model: MODEL,
        input: 'x',
        tools: [{ type: 'file_search', vector_store_ids: ['vs_1'] }],
        tool_choice: { type: 'file_search' },
      })
      .catch((e: unknown) => e);
    expect(forced).toBeInstanceOf(APIError);
    expect(forced).toMatchObject({ status: 400, param: 'tool_choice' });
  });
});

describe('openai SDK: responses.create errors', () => {
  it('raises AuthenticationError (401) for an unknown key, streaming or not', async () => {
    const unknown = client(UNKNOWN_KEY);
    expect(await unknown.responses.create({ model: MODEL, input: 'hi' }).catch((e: unknown) => e)).toBeInstanceOf(
      AuthenticationError,
    );
    const streamed = await unknown.responses.create({ model: MODEL, input: 'hi', stream: true }).catch((e) => e);
    expect(streamed).toBeInstanceOf(AuthenticationError);
  });

  it('raises an APIError with status 402 insufficient_credits when the balance is empty', async () => {
    const error = await client(await brokeKey(gateway))
      .responses.create({ model: MODEL, input: 'hi' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(APIError);
    expect(error).toMatchObject({ status: 402, code: 'insufficient_credits' });
  });

  it('raises PermissionDeniedError (403) for a model outside a project key allow-list', async () => {
    const limited = await gateway.key(account.id, { permissions: 'project', models: ['sandbox/echo'] });
    const error = await client(limited.key)
      .responses.create({ model: MODEL, input: 'hi' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PermissionDeniedError);
  });

  it('raises RateLimitError (429) with Retry-After', async () => {
    const error = await client(await rateLimitedKey(gateway))
      .responses.create({ model: MODEL, input: 'hi' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitError);
    expect(Number((error as RateLimitError).headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });
});
