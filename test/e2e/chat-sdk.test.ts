/**
 * The first test of the API: the official `openai` SDK against a running gateway, as a user would use it.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type TestGateway } from '../support/gateway.js';

let gateway: TestGateway;
let client: OpenAI;

beforeAll(async () => {
  gateway = await startGateway();
  client = gateway.client(gateway.firstKey);
});
afterAll(async () => gateway?.close());

describe('chat completions with the openai SDK', () => {
  it('answers a non-streaming request with usage and cost', async () => {
    const completion = await client.chat.completions.create({
      model: 'sandbox/echo',
      messages: [{ role: 'user', content: 'Hello, tollgate!' }],
    });
    expect(completion.object).toBe('chat.completion');
    expect(completion.model).toBe('sandbox/echo');
    expect(completion.choices[0]!.message.content).toBe('Hello, tollgate!');
    expect(completion.choices[0]!.finish_reason).toBe('stop');
    const usage = completion.usage as OpenAI.CompletionUsage & { cost: number };
    expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens);
    // sandbox/echo is priced 0.00015 / 0.0006 USD per 1k tokens (150,000 / 600,000 nano-USD); cost rounds up to 1e-9 USD.
    const expected = Math.ceil((usage.prompt_tokens * 150_000 + usage.completion_tokens * 600_000) / 1000) / 1e9;
    expect(usage.cost).toBeCloseTo(expected, 12);
  });

  it('streams chunks ending with usage (cost included) when include_usage is set', async () => {
    const stream = await client.chat.completions.create({
      model: 'sandbox/lorem',
      messages: [{ role: 'user', content: 'Tell me something' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let chunks = 0;
    let usage: (OpenAI.CompletionUsage & { cost?: number }) | undefined;
    for await (const chunk of stream) {
      chunks++;
      expect(chunk.model).toBe('sandbox/lorem');
      text += chunk.choices[0]?.delta.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(chunks).toBeGreaterThan(3);
    expect(text.split(' ').length).toBeGreaterThan(5);
    expect(usage?.completion_tokens).toBeGreaterThan(0);
    expect(usage?.cost).toBeGreaterThan(0);
  });

  it('streams without any usage chunk when include_usage is not set', async () => {
    const stream = await client.chat.completions.create({
      model: 'sandbox/echo',
      messages: [{ role: 'user', content: 'no usage please' }],
      stream: true,
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.some((c) => c.usage)).toBe(false);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? '').join('')).toBe('no usage please');
  });

  it('calls the first tool when tool_choice requires one, streamed or not', async () => {
    const tools: OpenAI.ChatCompletionTool[] = [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          parameters: {
            type: 'object',
            properties: { city: { type: 'string' }, days: { type: 'integer' } },
            required: ['city'],
          },
        },
      },
    ];
    const completion = await client.chat.completions.create({
      model: 'sandbox/echo',
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools,
      tool_choice: 'required',
    });
    const call = completion.choices[0]!.message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(completion.choices[0]!.finish_reason).toBe('tool_calls');
    expect(call.function.name).toBe('get_weather');
    expect(typeof JSON.parse(call.function.arguments).city).toBe('string');

    const stream = client.chat.completions.stream({
      model: 'sandbox/echo',
      messages: [{ role: 'user', content: 'Weather in Paris?' }],
      tools,
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    });
    const final = await stream.finalChatCompletion();
    const streamed = final.choices[0]!.message.tool_calls![0] as OpenAI.ChatCompletionMessageFunctionToolCall;
    expect(streamed.function.arguments).toBe(call.function.arguments);
  });

  it('honours n, stop, max_tokens and JSON mode', async () => {
    const two = await client.chat.completions.create({
      model: 'sandbox/lorem',
      n: 2,
      messages: [{ role: 'user', content: 'two' }],
    });
    expect(two.choices.map((c) => c.index)).toEqual([0, 1]);

    const stopped = await client.chat.completions.create({
      model: 'sandbox/echo',
      stop: ['STOP'],
      messages: [{ role: 'user', content: 'keep this STOP drop this' }],
    });
    expect(stopped.choices[0]!.message.content).toBe('keep this ');

    const short = await client.chat.completions.create({
      model: 'sandbox/lorem',
      max_tokens: 3,
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(short.choices[0]!.finish_reason).toBe('length');
    expect(short.usage!.completion_tokens).toBeLessThanOrEqual(3);

    const json = await client.chat.completions.create({
      model: 'sandbox/echo',
      response_format: { type: 'json_object' },
      messages: [
        { role: 'system', content: 'Answer in JSON' },
        { role: 'user', content: 'hi' },
      ],
    });
    expect(typeof JSON.parse(json.choices[0]!.message.content!)).toBe('object');
  });

  it('accepts image parts and developer/tool roles', async () => {
    const completion = await client.chat.completions.create({
      model: 'sandbox/echo',
      messages: [
        { role: 'developer', content: 'Be brief.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is this?' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } },
          ],
        },
      ],
    });
    expect(completion.choices[0]!.message.content).toBe('What is this?');
    // An image is counted as 1,000 prompt tokens.
    expect(completion.usage!.prompt_tokens).toBeGreaterThan(1000);
  });
});

describe('errors as the SDK sees them', () => {
  it('raises AuthenticationError for a missing or unknown key', async () => {
    await expect(gateway.client('tg-live-' + 'x'.repeat(32)).models.list()).rejects.toBeInstanceOf(
      OpenAI.AuthenticationError,
    );
    const response = await fetch(`${gateway.baseURL}/chat/completions`, {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'application/json' },
    });
    expect(response.status).toBe(401);
    expect(((await response.json()) as any).error).toMatchObject({
      code: 'missing_api_key',
      type: 'authentication_error',
      message: 'No API key provided',
    });
  });

  it('raises RateLimitError with Retry-After once the requests-per-minute limit is used', async () => {
    const account = await gateway.account();
    await gateway.admin('PATCH', `/admin/accounts/${account.id}`, { requests_per_minute: 2 });
    const limited = gateway.client(account.key);
    const ask = () =>
      limited.chat.completions.create({ model: 'sandbox/echo', messages: [{ role: 'user', content: 'hi' }] });
    await ask();
    await ask();
    const error = await ask().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.RateLimitError);
    const rateError = error as InstanceType<typeof OpenAI.RateLimitError>;
    expect(rateError.code).toBe('rate_limit_exceeded');
    const retryAfter = Number(rateError.headers?.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect((rateError.error as { retry_after: number }).retry_after).toBe(retryAfter);
    expect(rateError.headers?.get('x-ratelimit-remaining-requests')).toBe('0');
  });

  it('counts GET /v1/credits and /v1/models against the same requests-per-minute limit', async () => {
    const account = await gateway.account();
    await gateway.admin('PATCH', `/admin/accounts/${account.id}`, { requests_per_minute: 2 });
    const get = (path: string) =>
      fetch(`${gateway.baseURL}${path}`, { headers: { authorization: `Bearer ${account.key}` } });
    const first = await get('/credits');
    expect(first.status).toBe(200);
    expect(first.headers.get('x-ratelimit-remaining-requests')).toBe('1');
    expect((await get('/models')).status).toBe(200);
    const refused = await get('/credits');
    expect(refused.status).toBe(429);
    const body = (await refused.json()) as any;
    expect(body.error).toMatchObject({ code: 'rate_limit_exceeded', type: 'rate_limit_error', param: null });
    expect(Number(refused.headers.get('retry-after'))).toBe(body.error.retry_after);
  });

  it('explains what a bad parameter should have been', async () => {
    const error = (await client.chat.completions
      .create({ model: 'sandbox/echo', max_tokens: 0, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e)) as InstanceType<typeof OpenAI.BadRequestError>;
    expect(error).toBeInstanceOf(OpenAI.BadRequestError);
    expect(error.param).toBe('max_tokens');
    expect(error.message).toMatch(/Invalid value for 'max_tokens': expected an integer of at least 1/);
  });

  it('answers 402 insufficient_credits when the balance cannot pay the prompt plus one token', async () => {
    const account = await gateway.account();
    await gateway.setBalance(account.id, 0);
    const error = await gateway
      .client(account.key)
      .chat.completions.create({ model: 'sandbox/echo', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(402);
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('insufficient_credits');
  });

  it('lowers max_tokens to what the balance pays instead of refusing', async () => {
    const account = await gateway.account();
    // 0.00001 USD pays the prompt and about 14 completion tokens of sandbox/lorem.
    await gateway.setBalance(account.id, 0.00001);
    const completion = await gateway.client(account.key).chat.completions.create({
      model: 'sandbox/lorem',
      max_tokens: 500,
      messages: [{ role: 'user', content: 'write a lot' }],
    });
    expect(completion.choices[0]!.finish_reason).toBe('length');
    expect(completion.usage!.completion_tokens).toBeLessThan(20);
    const { body } = await gateway.admin('GET', `/admin/accounts/${account.id}`);
    expect(body.balance.credits).toBeGreaterThanOrEqual(0);
    expect(body.balance.credits).toBeCloseTo(0.00001 - (completion.usage as unknown as { cost: number }).cost, 12);
  });

  it('answers 429 daily_limit_exceeded with the seconds until midnight UTC', async () => {
    const account = await gateway.account();
    await gateway.admin('PATCH', `/admin/accounts/${account.id}`, { daily_limit: 0.000001 });
    const response = await fetch(`${gateway.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${account.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'sandbox/echo',
        messages: [{ role: 'user', content: 'a fairly long prompt to exceed the tiny daily limit' }],
      }),
    });
    expect(response.status).toBe(429);
    const body = (await response.json()) as any;
    expect(body.error.code).toBe('daily_limit_exceeded');
    const midnight = new Date();
    midnight.setUTCHours(24, 0, 0, 0);
    expect(Math.abs(body.error.retry_after - (midnight.getTime() - Date.now()) / 1000)).toBeLessThan(5);
    expect(response.headers.get('retry-after')).toBe(String(body.error.retry_after));
  });
});

describe('test keys', () => {
  it('answer every catalog model from the sandbox for free', async () => {
    const account = await gateway.account();
    const testKey = await gateway.key(account.id, { environment: 'test' });
    expect(testKey.key).toMatch(/^tg-test-[0-9A-Za-z]{32}$/);
    const { body: models } = await gateway.admin('GET', '/admin/accounts/' + account.id);
    const before = models.balance.credits;
    const listed = await fetch(`${gateway.baseURL}/models?active_only=false&provider=openai`, {
      headers: { authorization: `Bearer ${testKey.key}` },
    });
    const openaiModel = ((await listed.json()) as any).data[0];
    expect(openaiModel.status.active).toBe(false);
    const completion = await gateway.client(testKey.key).chat.completions.create({
      model: openaiModel.id,
      messages: [{ role: 'user', content: 'free of charge' }],
    });
    expect(completion.model).toBe(openaiModel.id);
    expect(completion.choices[0]!.message.content).toBe('free of charge');
    expect((completion.usage as unknown as { cost: number }).cost).toBe(0);
    const { body: after } = await gateway.admin('GET', '/admin/accounts/' + account.id);
    expect(after.balance.credits).toBe(before);
  });
});

describe('metrics', () => {
  it('counts requests by route and status, streamed ones included', async () => {
    const stream = await client.chat.completions.create({
      model: 'sandbox/echo',
      stream: true,
      messages: [{ role: 'user', content: 'count me' }],
    });
    for await (const _ of stream) void _;
    const response = await fetch(`${gateway.url}/metrics`, {
      headers: { authorization: 'Bearer test-admin-token-0123456789' },
    });
    const text = await response.text();
    const line = text
      .split('\n')
      .find((l) => l.startsWith('tollgate_requests_total{route="/v1/chat/completions",status="200"}'));
    expect(Number(line?.split(' ')[1])).toBeGreaterThan(5);
    expect(text).toMatch(/tollgate_request_duration_seconds_bucket\{le="0.005",route="\/v1\/chat\/completions"\}/);
  });
});
