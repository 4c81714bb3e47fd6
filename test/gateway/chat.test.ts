/** The chat request path on fake dependencies: admission, routing's answer, settlement, events, idempotency. */
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../src/errors/index.js';
import { admit, createChatCompletion, type RequestInput } from '../../src/gateway/index.js';
import { UpstreamError } from '../../src/providers/index.js';
import { countPromptTokens } from '../../src/tokens/index.js';
import { DONE, type ChatCompletion } from '../../src/wire/index.js';
import {
  API_KEY,
  MODEL,
  account,
  chunk,
  completion,
  fakeDeps,
  model,
  recorded,
  streamOf,
  inputOf,
  refusal,
  drain,
} from './fakes.js';

const input = (body: Record<string, unknown> = {}, extra: Partial<RequestInput> = {}) =>
  inputOf({ model: MODEL, messages: [{ role: 'user', content: 'Hi' }] }, body, extra);

describe('chat admission', () => {
  it('refuses a request without a valid key at 401 before reading the body', async () => {
    const fake = fakeDeps();
    const error = await refusal(
      createChatCompletion(input({ messages: 'not a list' }, { authorization: 'Bearer nope' }), fake.deps),
    );
    expect([error.status, error.code]).toEqual([401, 'invalid_api_key']);
    expect(fake.router.route).not.toHaveBeenCalled();
  });

  it('refuses at 402 when the wallet says so: nothing is called upstream, nothing settled', async () => {
    const fake = fakeDeps({ refuse: new GatewayError('insufficient_credits') });
    const error = await refusal(createChatCompletion(input(), fake.deps));
    expect([error.status, error.code]).toEqual([402, 'insufficient_credits']);
    expect(fake.router.run).not.toHaveBeenCalled();
    expect(fake.settled).toEqual([]);
  });

  it('refuses at 429 with Retry-After and the rate-limit headers before any credit is held', async () => {
    const fake = fakeDeps({ rateLimited: true });
    const error = await refusal(createChatCompletion(input(), fake.deps));
    expect([error.status, error.code]).toEqual([429, 'rate_limit_exceeded']);
    expect(error.headers).toMatchObject({
      'retry-after': '7',
      'x-ratelimit-remaining-requests': '0',
      'x-tollgate-provider': 'openai',
    });
    expect(fake.wallet.reserve).not.toHaveBeenCalled();
    expect(fake.metrics.rateLimited.inc).toHaveBeenCalledTimes(1);
  });

  it('asks the limiter before measuring a large body, and refuses it there without counting it', async () => {
    const fake = fakeDeps({ rateLimited: true });
    const large = { messages: [{ role: 'user', content: 'word '.repeat(4_000) }] };
    const error = await refusal(createChatCompletion(input(large), fake.deps));
    expect([error.status, error.code]).toEqual([429, 'rate_limit_exceeded']);
    expect(error.headers).toMatchObject({ 'retry-after': '7', 'x-ratelimit-remaining-requests': '0' });
    expect(fake.limiter.peek).toHaveBeenCalledTimes(1);
    expect(fake.limiter.admit).not.toHaveBeenCalled();
    // Admitted, the same body is measured as it would be at once, and a small body is never peeked at.
    const admitted = fakeDeps();
    await createChatCompletion(input(large), admitted.deps);
    expect(admitted.limiter.peek).toHaveBeenCalledTimes(1);
    const measuredBody: Parameters<typeof countPromptTokens>[0] = { ...large };
    expect((admitted.limiter.admit.mock.calls[0] as unknown[])[2]).toBe(countPromptTokens(measuredBody));
    const small = fakeDeps();
    await createChatCompletion(input(), small.deps);
    expect(small.limiter.peek).not.toHaveBeenCalled();
  });

  it('the read endpoints share the admission: their rate limit counts no tokens and refuses the same way', async () => {
    const fake = fakeDeps();
    const { key, headers } = await admit(fake.deps, { authorization: API_KEY, clientIp: '127.0.0.1' }, 'credits');
    expect(key.accountId).toBe(account.id);
    expect(headers['x-ratelimit-remaining-requests']).toBe('59');
    expect(headers['x-tollgate-provider']).toBeUndefined();
    expect(fake.limiter.admit).toHaveBeenCalledWith(account.id, {}, 0, undefined);
    const refused = await refusal(
      admit(fakeDeps({ rateLimited: true }).deps, { authorization: API_KEY, clientIp: '127.0.0.1' }, 'credits'),
    );
    expect(refused.status).toBe(429);
  });
});

describe('a JSON answer', () => {
  it('settles at the upstream usage, answers with what was billed, and names the deployment that answered', async () => {
    const fallback = model('claude-haiku-5-5');
    const fake = fakeDeps({
      provider: {
        complete: () => Promise.resolve(completion('Hello there', { prompt_tokens: 12, completion_tokens: 4 })),
      },
      answeredBy: { model: fallback, providerId: 'anthropic' },
    });
    const request = input({ models: ['claude-haiku-5-5'] });
    const result = await createChatCompletion(request, fake.deps);
    expect(result.kind).toBe('json');
    if (result.kind !== 'json') return;
    expect(fake.settled).toMatchObject([{ promptTokens: 12, completionTokens: 4, model: fallback.id }]);
    expect(result.body.model).toBe(fallback.id);
    expect(result.body.usage).toMatchObject({
      prompt_tokens: 12,
      completion_tokens: 4,
      total_tokens: 16,
      cost: 0.0015,
    });
    expect(result.headers['x-tollgate-provider']).toBe('anthropic');
    expect(fake.reservation.release).not.toHaveBeenCalled();
    await recorded();
    expect(fake.metrics.recordChat).toHaveBeenCalledWith('anthropic', fallback.id, true, expect.any(Number), {
      prompt: 12,
      completion: 4,
      usd: 0.0015,
    });
    // The completion was counted in the token window at admission; what the answer did not use goes back on close.
    expect(fake.limiter.admit).toHaveBeenCalledWith(account.id, {}, expect.any(Number), {
      bound: expect.any(Number),
      choices: 1,
    });
    const [closed] = fake.reservation.whenClosed.mock.calls[0]! as [(completionTokens: number) => void];
    closed(4);
    expect(fake.limiter.giveBack).toHaveBeenCalledWith(account.id, 1_000, 1_000 - 4);
    expect(request.lines).toMatchObject([{ status: 200, provider: 'anthropic', model: fallback.id, cost: 0.0015 }]);
  });

  it('counts the answer itself when the upstream reports no usage', async () => {
    const fake = fakeDeps({ provider: { complete: () => Promise.resolve(completion('one two three')) } });
    await createChatCompletion(input(), fake.deps);
    expect(fake.settled).toHaveLength(1);
    expect(fake.settled[0]!.completionTokens).toBeGreaterThan(0);
  });

  it('emits llm.completion with the debit, carrying the text and the tokens billed', async () => {
    const fake = fakeDeps();
    await createChatCompletion(input(), fake.deps);
    const event = fake.events.find((e) => e.type === 'llm.completion');
    expect(event).toMatchObject({
      accountId: account.id,
      data: {
        requestId: 'req_1',
        completion: 'Hello there',
        tokens: { prompt: 10, completion: 5, total: 15 },
        metadata: { provider: 'openai' },
      },
    });
  });

  it('sends the lowered completion bound upstream and says so, leaving the request as it was', async () => {
    const fake = fakeDeps({ lowerTo: 50 });
    const request = input({ max_tokens: 4_000, timeout_ms: 30_000 });
    const result = await createChatCompletion(request, fake.deps);
    expect(result.headers['x-tollgate-max-tokens-lowered']).toBe('50');
    expect(fake.calls[0]!.body).toMatchObject({ max_tokens: 50 });
    expect(request.body).toMatchObject({ max_tokens: 4_000, timeout_ms: 30_000, model: MODEL });
  });
});

describe('an upstream failure', () => {
  const failing = (error: Error) =>
    fakeDeps({
      provider: {
        complete: () => Promise.reject(error),
        stream: () => ({
          [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(error) }),
        }),
      },
      answeredBy: { model: model('claude-haiku-5-5'), providerId: 'anthropic' },
    });

  it('releases the hold without charging, maps to 502, and names the deployment that failed', async () => {
    const fake = failing(new UpstreamError('anthropic', 'http', 'secret upstream text', { status: 500 }));
    const request = input();
    const error = await refusal(createChatCompletion(request, fake.deps));
    expect([error.status, error.code]).toEqual([502, 'upstream_error']);
    expect(error.message).toBe("The provider 'anthropic' failed with status 500");
    expect(fake.reservation.release).toHaveBeenCalledTimes(1);
    expect(fake.settled).toEqual([]);
    const event = fake.events.find((e) => e.type === 'llm.error');
    expect(event).toMatchObject({
      data: { error: { code: 'upstream_error' }, tokens: { total: 0 }, metadata: { provider: 'anthropic' } },
    });
    await recorded();
    expect(fake.metrics.recordChat).toHaveBeenCalledWith(
      'anthropic',
      'claude-haiku-5-5',
      false,
      expect.any(Number),
      undefined,
    );
    expect(request.lines).toMatchObject([{ status: 502, provider: 'anthropic', cost: 0 }]);
  });

  it('a request the upstream rejects is the client 400 with the upstream words', async () => {
    const fake = failing(
      new UpstreamError('anthropic', 'http', 'messages: too many', { status: 422, param: 'messages' }),
    );
    const error = await refusal(createChatCompletion(input(), fake.deps));
    expect([error.status, error.code, error.param]).toEqual([400, 'invalid_request', 'messages']);
    expect(error.message).toContain('messages: too many');
    expect(fake.reservation.release).toHaveBeenCalledTimes(1);
  });

  it('a timeout is 504, and a client that went away is told so', async () => {
    const timedOut = await refusal(
      createChatCompletion(input(), failing(new UpstreamError('anthropic', 'timeout', 'slow')).deps),
    );
    expect(timedOut.status).toBe(504);
    const controller = new AbortController();
    controller.abort();
    const gone = await refusal(
      createChatCompletion(input({}, { signal: controller.signal }), failing(new Error('aborted')).deps),
    );
    expect([gone.status, gone.message]).toEqual([400, 'The client closed the request']);
  });
});

describe('a streamed answer', () => {
  it('relays the chunks under the catalog id, settles before [DONE], and emits the stream events', async () => {
    const chunks = [
      chunk('Hel'),
      chunk('lo'),
      chunk('', { choices: [], usage: { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 } }),
    ];
    const fake = fakeDeps({ provider: { stream: () => streamOf(chunks) } });
    const result = await createChatCompletion(
      input({ stream: true, stream_options: { include_usage: true } }),
      fake.deps,
    );
    expect(result.headers['x-tollgate-provider']).toBe('openai');
    const events = await drain(result);
    expect(events.at(-1)).toEqual(DONE);
    const parsed = events.slice(0, -1).map((e) => e.data as ChatCompletion);
    expect(parsed.map((c) => c.model)).toEqual([MODEL, MODEL, MODEL]);
    expect(parsed.at(-1)!.usage).toMatchObject({ prompt_tokens: 9, completion_tokens: 2, cost: 0.0015 });
    expect(fake.settled).toMatchObject([{ promptTokens: 9, completionTokens: 2 }]);
    expect(fake.events.map((e) => e.type)).toEqual([
      'llm.streaming.start',
      'llm.streaming.chunk',
      'llm.streaming.chunk',
      'llm.completion',
      'llm.streaming.end',
    ]);
  });

  it('a stream that fails before it starts releases the hold, like a JSON one', async () => {
    const refused = new UpstreamError('openai', 'connection', 'refused');
    const fake = fakeDeps({
      provider: { stream: () => ({ [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(refused) }) }) },
    });
    const error = await refusal(createChatCompletion(input({ stream: true }), fake.deps));
    expect([error.status, error.message]).toEqual([502, "The provider 'openai' could not be reached"]);
    expect(fake.reservation.release).toHaveBeenCalledTimes(1);
  });
});

describe('Idempotency-Key', () => {
  it('replays the first answer to a retry without calling upstream or charging again', async () => {
    const fake = fakeDeps();
    const first = await createChatCompletion(input({}, { idempotencyKey: 'k-1' }), fake.deps);
    const again = await createChatCompletion(input({}, { idempotencyKey: 'k-1' }), fake.deps);
    expect(fake.router.run).toHaveBeenCalledTimes(1);
    expect(fake.settled).toHaveLength(1);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.kind === 'json' && first.kind === 'json' && again.body).toEqual(first.kind === 'json' && first.body);
  });

  it('a key reused with another body is 422', async () => {
    const fake = fakeDeps();
    await createChatCompletion(input({}, { idempotencyKey: 'k-2' }), fake.deps);
    const error = await refusal(
      createChatCompletion(
        input({ messages: [{ role: 'user', content: 'Other' }] }, { idempotencyKey: 'k-2' }),
        fake.deps,
      ),
    );
    expect([error.status, error.code]).toEqual([422, 'idempotency_key_reused']);
  });
});
