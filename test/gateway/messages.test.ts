/** POST /v1/messages on fake dependencies: translated through chat, or passed through to a native provider. */
import { describe, expect, it } from 'vitest';
import { authorizationOf, createMessage, type Answer, type RequestInput } from '../../src/gateway/index.js';
import { UpstreamError, type MessagesEvent } from '../../src/providers/index.js';
import type { StreamEvent, UpstreamAnthropicMessage } from '../../src/wire/index.js';
import { API_KEY, chunk, completion, fakeDeps, model, streamOf, type Setup, inputOf, refusal } from './fakes.js';

const CLAUDE = 'claude-haiku-5-5';

const input = (body: Record<string, unknown> = {}, extra: Partial<RequestInput> = {}) =>
  inputOf({ model: CLAUDE, max_tokens: 200, messages: [{ role: 'user', content: 'Hi' }] }, body, extra);

/** Every event of a stream, with how many settlements had been made when each was handed out. */
async function drain<B>(result: Answer<B>, settled: unknown[]) {
  if (result.kind !== 'stream') throw new Error('expected a stream');
  const events: StreamEvent[] = [];
  const settledAt: number[] = [];
  for await (const event of result.events) {
    events.push(event);
    settledAt.push(settled.length);
  }
  return { events, settledAt, names: events.map((e) => e.event) };
}

/** Anthropic's own answer to a Messages request. */
function anthropicMessage(usage: Record<string, unknown>): UpstreamAnthropicMessage {
  return {
    id: 'msg_upstream',
    type: 'message',
    role: 'assistant',
    model: 'claude-upstream-name',
    content: [{ type: 'text', text: 'Bonjour' }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage,
  };
}

/** Anthropic's stream for the same answer. */
function anthropicEvents(): MessagesEvent[] {
  const event = (name: string, data: Record<string, unknown>): MessagesEvent => ({
    event: name,
    data: { type: name, ...data },
  });
  return [
    event('message_start', {
      message: {
        ...anthropicMessage({ input_tokens: 12, cache_read_input_tokens: 3, output_tokens: 1 }),
        content: [],
        stop_reason: null,
      },
    }),
    event('ping', {}),
    event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }),
    event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'Bon' } }),
    event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: 'jour' } }),
    event('content_block_stop', { index: 0 }),
    event('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 6 } }),
    event('message_stop', {}),
  ];
}

/** A deployment of Anthropic itself, which speaks Messages natively. */
function native(provider: Setup['provider'] = {}, setup: Omit<Setup, 'provider'> = {}) {
  return fakeDeps({
    provider: {
      createMessage: () =>
        Promise.resolve(
          anthropicMessage({
            input_tokens: 20,
            cache_creation_input_tokens: 5,
            cache_read_input_tokens: 7,
            output_tokens: 4,
          }),
        ),
      streamMessage: () => streamOf(anthropicEvents()),
      ...provider,
    },
    answeredBy: { model: model(CLAUDE), providerId: 'anthropic' },
    ...setup,
  });
}

describe('Messages admission', () => {
  it('a keyless request is 401 before its body is read or anything is routed', async () => {
    const fake = native();
    const error = await refusal(createMessage(input({ max_tokens: 'lots' }, { authorization: undefined }), fake.deps));
    expect([error.status, error.code]).toEqual([401, 'invalid_api_key']);
    expect(fake.router.route).not.toHaveBeenCalled();
    expect(fake.wallet.reserve).not.toHaveBeenCalled();
    expect(fake.calls).toEqual([]);
  });

  it("an Anthropic SDK's x-api-key is the key when there is no Authorization", () => {
    expect(authorizationOf(undefined, 'tg_good')).toBe(API_KEY);
    expect(authorizationOf('Bearer other', 'tg_good')).toBe('Bearer other');
    expect(authorizationOf(undefined, undefined)).toBeUndefined();
  });

  it('a body without max_tokens is 400 naming it, and nothing is held', async () => {
    const fake = native();
    const error = await refusal(createMessage(input({ max_tokens: undefined }), fake.deps));
    expect([error.status, error.param]).toEqual([400, 'max_tokens']);
    expect(fake.wallet.reserve).not.toHaveBeenCalled();
  });
});

describe('a Messages answer translated through chat', () => {
  it('is an Anthropic Message settled at the upstream usage, with the cost and the provider in headers', async () => {
    const fake = fakeDeps({
      provider: {
        complete: () => Promise.resolve(completion('Hello there', { prompt_tokens: 12, completion_tokens: 4 })),
      },
    });
    const result = await createMessage(input({ model: 'gpt-6-luna' }), fake.deps);
    if (result.kind !== 'json') throw new Error('expected JSON');
    expect(fake.calls.map((c) => c.method)).toEqual(['complete']);
    expect(fake.calls[0]!.body).toMatchObject({
      model: 'upstream-name',
      max_tokens: 200,
      messages: [{ role: 'user', content: 'Hi' }],
    });
    expect(result.body).toEqual({
      id: 'msg_req_1',
      type: 'message',
      role: 'assistant',
      model: 'gpt-6-luna',
      content: [{ type: 'text', text: 'Hello there' }],
      stop_reason: 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 12, output_tokens: 4, cost: 0.0015 },
    });
    expect(fake.settled).toMatchObject([{ promptTokens: 12, completionTokens: 4, model: 'gpt-6-luna' }]);
    expect(result.headers['x-tollgate-cost']).toBe('0.0015');
    expect(result.headers['x-tollgate-provider']).toBe('openai');
    expect(fake.reservation.release).not.toHaveBeenCalled();
  });

  it('a stream is Messages events, as objects, settled once before message_stop with the cost on message_delta', async () => {
    const chunks = [
      chunk('Hel'),
      chunk('lo', { choices: [{ index: 0, delta: { content: 'lo' }, finish_reason: 'stop' }] }),
      chunk('', { choices: [], usage: { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 } }),
    ];
    const fake = fakeDeps({ provider: { stream: () => streamOf(chunks) } });
    const result = await createMessage(input({ model: 'gpt-6-luna', stream: true }), fake.deps);
    expect(fake.calls[0]).toMatchObject({ method: 'stream', body: { stream: true } });
    const { events, settledAt, names } = await drain(result, fake.settled);
    expect(names).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    for (const event of events) {
      expect(typeof event.data).toBe('object');
      expect(event.data).toMatchObject({ type: event.event });
    }
    expect(events[0]!.data).toMatchObject({ message: { id: 'msg_req_1', model: 'gpt-6-luna', role: 'assistant' } });
    const text = events
      .filter((e) => e.event === 'content_block_delta')
      .map((e) => (e.data as { delta: { text: string } }).delta.text);
    expect(text.join('')).toBe('Hello');
    expect(events.at(-2)!.data).toMatchObject({
      delta: { stop_reason: 'end_turn' },
      usage: { input_tokens: 9, output_tokens: 2, cost: 0.0015 },
    });
    expect(fake.settled).toMatchObject([{ promptTokens: 9, completionTokens: 2, model: 'gpt-6-luna' }]);
    expect(settledAt.at(-1)).toBe(1);
    expect(settledAt[names.indexOf('content_block_delta')]).toBe(0);
  });

  it('a translated stream that fails after its first byte ends with an Anthropic error event, no message_stop', async () => {
    async function* failing() {
      yield chunk('Hel');
      await Promise.resolve();
      throw new UpstreamError('openai', 'http', 'boom', { status: 500 });
    }
    const fake = fakeDeps({ provider: { stream: () => failing() } });
    const result = await createMessage(input({ model: 'gpt-6-luna', stream: true }), fake.deps);
    const { events, names } = await drain(result, fake.settled);
    expect(names).not.toContain('message_stop');
    expect(events.at(-1)).toMatchObject({ event: 'error', data: { type: 'error', error: { type: 'api_error' } } });
    expect(fake.settled).toHaveLength(1);
  });
});

describe('a Messages answer from a native provider', () => {
  it("passes the client's body with the upstream model name and anthropic-beta, billing cache tokens as prompt", async () => {
    const fake = native();
    const body = {
      model: CLAUDE,
      max_tokens: 300,
      system: [{ type: 'text', text: 'Be brief', cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: 'Hi' }],
    };
    const beta = { 'anthropic-beta': 'prompt-caching-2024-07-31' };
    const result = await createMessage(input(body, { forwardHeaders: beta }), fake.deps);
    if (result.kind !== 'json') throw new Error('expected JSON');
    expect(fake.calls).toEqual([{ method: 'createMessage', body: { ...body, model: 'upstream-name' }, headers: beta }]);
    expect(fake.settled).toMatchObject([{ promptTokens: 20 + 5 + 7, completionTokens: 4, model: CLAUDE }]);
    expect(result.body).toMatchObject({
      id: 'msg_upstream',
      model: CLAUDE,
      content: [{ type: 'text', text: 'Bonjour' }],
    });
    expect(result.headers['x-tollgate-cost']).toBe('0.0015');
    expect(result.headers['x-tollgate-provider']).toBe('anthropic');
    expect(result.headers['x-tollgate-max-tokens-lowered']).toBeUndefined();
  });

  it('counts the answer when Anthropic reports no output tokens', async () => {
    const fake = native({ createMessage: () => Promise.resolve(anthropicMessage({ input_tokens: 20 })) });
    await createMessage(input(), fake.deps);
    expect(fake.settled).toHaveLength(1);
    expect(fake.settled[0]).toMatchObject({ promptTokens: 20 });
    expect(fake.settled[0]!.completionTokens).toBeGreaterThan(0);
  });

  it('a bound the budget lowered goes upstream as max_tokens and is told in x-tollgate-max-tokens-lowered', async () => {
    const fake = native({}, { lowerTo: 50 });
    const request = input({ max_tokens: 4_000 });
    const result = await createMessage(request, fake.deps);
    expect(fake.calls[0]!.body).toMatchObject({ max_tokens: 50 });
    expect(result.headers['x-tollgate-max-tokens-lowered']).toBe('50');
    expect(request.body).toMatchObject({ max_tokens: 4_000 });
  });

  it('a lowered bound lowers the thinking budget below it, or turns thinking off when too little is left', async () => {
    const thinking = { type: 'enabled', budget_tokens: 3_000 };
    const roomy = native({}, { lowerTo: 2_000 });
    await createMessage(input({ max_tokens: 8_000, thinking }), roomy.deps);
    expect(roomy.calls[0]!.body).toMatchObject({
      max_tokens: 2_000,
      thinking: { type: 'enabled', budget_tokens: 1_999 },
    });
    const tight = native({}, { lowerTo: 600 });
    await createMessage(input({ max_tokens: 8_000, thinking }), tight.deps);
    expect(tight.calls[0]!.body).toMatchObject({ max_tokens: 600 });
    expect(tight.calls[0]!.body.thinking).toBeUndefined();
  });

  it('a stream is relayed as Anthropic sent it, named with the catalog id, the cost on message_delta, settled before message_stop', async () => {
    const fake = native();
    const beta = { 'anthropic-beta': 'interleaved-thinking-2025-05-14' };
    const result = await createMessage(input({ stream: true }, { forwardHeaders: beta }), fake.deps);
    expect(fake.calls).toMatchObject([{ method: 'streamMessage', body: { model: 'upstream-name', stream: true } }]);
    expect(fake.calls[0]!.headers).toEqual(beta);
    const { events, settledAt, names } = await drain(result, fake.settled);
    const expected = anthropicEvents();
    expect(names).toEqual(expected.map((e) => e.event));
    expect(events[0]!.data).toMatchObject({ message: { id: 'msg_upstream', model: CLAUDE } });
    expect(events.slice(1, -2)).toEqual(expected.slice(1, -2));
    expect(events.at(-2)!.data).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: 6, cost: 0.0015 },
    });
    expect(fake.settled).toMatchObject([{ promptTokens: 12 + 3, completionTokens: 6, model: CLAUDE }]);
    expect(settledAt[names.indexOf('message_delta')]).toBe(1);
    expect(settledAt[names.indexOf('content_block_delta')]).toBe(0);
  });
});

describe('a Messages request the upstream fails', () => {
  const failure = new UpstreamError('anthropic', 'http', 'overloaded', { status: 529 });

  it('natively: 502, the hold released, nothing settled', async () => {
    const fake = native({ createMessage: () => Promise.reject(failure) });
    const error = await refusal(createMessage(input(), fake.deps));
    expect([error.status, error.code]).toEqual([502, 'upstream_error']);
    expect(fake.reservation.release).toHaveBeenCalledTimes(1);
    expect(fake.settled).toEqual([]);
  });

  it('a native stream that fails before its first event: the hold released, nothing settled', async () => {
    const fake = native({
      streamMessage: () => ({ [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(failure) }) }),
    });
    const error = await refusal(createMessage(input({ stream: true }), fake.deps));
    expect(error.status).toBe(502);
    expect(fake.reservation.release).toHaveBeenCalledTimes(1);
    expect(fake.settled).toEqual([]);
  });

  it('translated: 502, the hold released, nothing settled', async () => {
    const fake = fakeDeps({ provider: { complete: () => Promise.reject(failure) } });
    const error = await refusal(createMessage(input({ model: 'gpt-6-luna' }), fake.deps));
    expect(error.status).toBe(502);
    expect(fake.reservation.release).toHaveBeenCalledTimes(1);
    expect(fake.settled).toEqual([]);
  });
});
