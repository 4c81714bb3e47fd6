/** POST /v1/responses on fake dependencies: translated through chat, or passed through to OpenAI natively. */
import { describe, expect, it } from 'vitest';
import { createResponse, type RequestInput } from '../../src/gateway/index.js';
import { UpstreamError } from '../../src/providers/index.js';
import type { NewResponse, ResponseStore, StoredResponse } from '../../src/storage/index.js';
import type { StreamEvent, UpstreamResponse, UpstreamResponseEvent } from '../../src/wire/index.js';
import { MODEL, account, chunk, completion, fakeDeps, streamOf, type Setup, inputOf, refusal, drain } from './fakes.js';

const input = (body: Record<string, unknown> = {}, extra: Partial<RequestInput> = {}) =>
  inputOf({ model: MODEL, input: 'Hi' }, body, extra);

/** The response ids in memory, bound to their account as the real store binds them. */
function memoryStore(...existing: NewResponse[]) {
  const recorded: NewResponse[] = [...existing];
  const store = {
    recorded,
    record(response: NewResponse): Promise<void> {
      if (!recorded.some((r) => r.id === response.id)) recorded.push(response);
      return Promise.resolve();
    },
    find(accountId: string, id: string): Promise<StoredResponse | undefined> {
      const found = recorded.find((r) => r.id === id && r.accountId === accountId);
      return Promise.resolve(
        found && { providerId: found.providerId, stateful: found.stateful, contextTokens: found.contextTokens },
      );
    },
  };
  return { store: store as unknown as ResponseStore, recorded };
}

const dataOf = (event: StreamEvent | undefined) => event?.data as Record<string, unknown>;

/** OpenAI's own Response. */
function openAiResponse(usage?: Record<string, unknown>): UpstreamResponse {
  return {
    id: 'resp_up1',
    object: 'response',
    status: 'completed',
    model: 'upstream-name-2026',
    output: [
      {
        type: 'message',
        id: 'msg_up1',
        role: 'assistant',
        content: [{ type: 'output_text', text: 'Hello from OpenAI', annotations: [] }],
      },
    ],
    ...(usage ? { usage } : {}),
  };
}

/** A deployment of OpenAI itself, which serves the Responses API natively. */
function native(provider: Setup['provider'] = {}, setup: Omit<Setup, 'provider'> = {}) {
  const events: UpstreamResponseEvent[] = [
    { type: 'response.created', sequence_number: 0, response: { ...openAiResponse(), status: 'in_progress' } },
    { type: 'response.output_text.delta', sequence_number: 1, delta: 'Hello ' },
    { type: 'response.output_text.delta', sequence_number: 2, delta: 'from OpenAI' },
    {
      type: 'response.completed',
      sequence_number: 3,
      response: openAiResponse({ input_tokens: 14, output_tokens: 3, total_tokens: 17 }),
    },
  ];
  return fakeDeps({
    provider: {
      respond: () =>
        Promise.resolve(
          openAiResponse({
            input_tokens: 21,
            input_tokens_details: { cached_tokens: 4 },
            output_tokens: 8,
            total_tokens: 29,
          }),
        ),
      streamResponse: () => streamOf(events),
      ...provider,
    },
    ...setup,
  });
}

describe('a Responses request refused before anything is routed', () => {
  it('an unknown previous_response_id is 404, also when it is another account’s', async () => {
    const { store } = memoryStore({
      id: 'resp_theirs',
      accountId: 'acct_other',
      providerId: 'openai',
      stateful: true,
      now: 0,
    });
    for (const id of ['resp_nowhere', 'resp_theirs']) {
      const fake = native();
      const error = await refusal(createResponse(input({ previous_response_id: id }), fake.deps, store));
      expect([error.status, error.code, error.param]).toEqual([404, 'not_found', 'previous_response_id']);
      expect(fake.router.route).not.toHaveBeenCalled();
      expect(fake.wallet.reserve).not.toHaveBeenCalled();
      expect(fake.calls).toEqual([]);
    }
  });

  it('background: true is 400 naming background', async () => {
    const fake = native();
    const error = await refusal(createResponse(input({ background: true }), fake.deps, memoryStore().store));
    expect([error.status, error.param]).toEqual([400, 'background']);
    expect(fake.calls).toEqual([]);
    expect(fake.wallet.reserve).not.toHaveBeenCalled();
  });

  it('a response answered by a provider that keeps nothing cannot be continued: 400', async () => {
    const { store } = memoryStore({
      id: 'resp_translated',
      accountId: account.id,
      providerId: 'anthropic',
      stateful: false,
      now: 0,
    });
    const fake = native();
    const error = await refusal(createResponse(input({ previous_response_id: 'resp_translated' }), fake.deps, store));
    expect([error.status, error.param]).toEqual([400, 'previous_response_id']);
    expect(fake.calls).toEqual([]);
  });

  it('a keyless request is 401', async () => {
    const fake = native();
    const error = await refusal(
      createResponse(input({}, { authorization: 'Bearer nope' }), fake.deps, memoryStore().store),
    );
    expect(error.status).toBe(401);
    expect(fake.router.route).not.toHaveBeenCalled();
  });
});

describe('a Responses answer translated through chat', () => {
  it('is a Response with the output text and the billed usage, its id kept as not continuable', async () => {
    const fake = fakeDeps({
      provider: {
        complete: () => Promise.resolve(completion('Hello there', { prompt_tokens: 12, completion_tokens: 4 })),
      },
    });
    const { store, recorded } = memoryStore();
    const result = await createResponse(input({ instructions: 'Be brief', max_output_tokens: 64 }), fake.deps, store);
    if (result.kind !== 'json') throw new Error('expected JSON');
    expect(fake.calls).toMatchObject([
      {
        method: 'complete',
        body: {
          model: 'upstream-name',
          messages: [
            { role: 'system', content: 'Be brief' },
            { role: 'user', content: 'Hi' },
          ],
        },
      },
    ]);
    const body = result.body;
    expect(body).toMatchObject({
      object: 'response',
      status: 'completed',
      model: MODEL,
      output: [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Hello there' }] }],
      usage: { input_tokens: 12, output_tokens: 4, total_tokens: 16, cost: 0.0015 },
    });
    expect(String(body.id)).toMatch(/^resp_/);
    expect(fake.settled).toMatchObject([{ promptTokens: 12, completionTokens: 4, model: MODEL }]);
    expect(result.headers['x-tollgate-provider']).toBe('openai');
    expect(recorded).toMatchObject([{ id: body.id, accountId: account.id, providerId: 'openai', stateful: false }]);
  });

  it('store: false keeps no id', async () => {
    const fake = fakeDeps();
    const { store, recorded } = memoryStore();
    await createResponse(input({ store: false }), fake.deps, store);
    expect(recorded).toEqual([]);
  });

  it('a stream ends with response.completed carrying the billed usage, settled once', async () => {
    const chunks = [
      chunk('Hel'),
      chunk('lo', { choices: [{ index: 0, delta: { content: 'lo' }, finish_reason: 'stop' }] }),
      chunk('', { choices: [], usage: { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11 } }),
    ];
    const fake = fakeDeps({ provider: { stream: () => streamOf(chunks) } });
    const { store, recorded } = memoryStore();
    const result = await createResponse(input({ stream: true }), fake.deps, store);
    expect(fake.calls[0]).toMatchObject({ method: 'stream', body: { stream: true } });
    const events = await drain(result);
    expect(events[0]!.event).toBe('response.created');
    for (const event of events) expect(dataOf(event).type).toBe(event.event);
    const deltas = events.filter((e) => e.event === 'response.output_text.delta').map((e) => dataOf(e).delta);
    expect(deltas).toEqual(['Hel', 'lo']);
    const last = events.at(-1)!;
    expect(last.event).toBe('response.completed');
    expect(dataOf(last).response).toMatchObject({
      status: 'completed',
      model: MODEL,
      output: [{ type: 'message', content: [{ type: 'output_text', text: 'Hello' }] }],
      usage: { input_tokens: 9, output_tokens: 2, total_tokens: 11, cost: 0.0015 },
    });
    expect(fake.settled).toMatchObject([{ promptTokens: 9, completionTokens: 2 }]);
    expect(recorded).toHaveLength(1);
    expect(recorded[0]!.id).toBe((dataOf(last).response as { id: string }).id);
  });
});

describe('a Responses answer from OpenAI natively', () => {
  it('passes the body without the routing fields, bills its usage, and keeps its id as continuable', async () => {
    const fake = native();
    const { store, recorded } = memoryStore();
    const body = {
      model: MODEL,
      input: 'Hi',
      models: ['gpt-6-luna'],
      timeout_ms: 30_000,
      reasoning: { effort: 'low' },
      include: ['reasoning.encrypted_content'],
    };
    const result = await createResponse(input(body), fake.deps, store);
    if (result.kind !== 'json') throw new Error('expected JSON');
    expect(fake.calls.map((c) => c.method)).toEqual(['respond']);
    expect(fake.calls[0]!.body).toEqual({
      model: 'upstream-name',
      input: 'Hi',
      reasoning: { effort: 'low' },
      include: ['reasoning.encrypted_content'],
    });
    expect(fake.settled).toMatchObject([{ promptTokens: 21, completionTokens: 8, model: MODEL }]);
    expect(result.body).toMatchObject({
      id: 'resp_up1',
      model: MODEL,
      output: [{ type: 'message', content: [{ text: 'Hello from OpenAI' }] }],
      usage: { input_tokens: 21, input_tokens_details: { cached_tokens: 4 }, output_tokens: 8, cost: 0.0015 },
    });
    expect(recorded).toMatchObject([{ id: 'resp_up1', accountId: account.id, providerId: 'openai', stateful: true }]);
  });

  it('a previous response kept by OpenAI is continued there', async () => {
    const { store } = memoryStore({
      id: 'resp_0',
      accountId: account.id,
      providerId: 'openai',
      stateful: true,
      now: 0,
    });
    const fake = native();
    await createResponse(input({ previous_response_id: 'resp_0' }), fake.deps, store);
    expect(fake.calls).toMatchObject([{ method: 'respond', body: { previous_response_id: 'resp_0' } }]);
    expect(fake.settled).toHaveLength(1);
  });

  it('a lowered bound goes upstream as max_output_tokens', async () => {
    const fake = native({}, { lowerTo: 50 });
    const result = await createResponse(input({ max_output_tokens: 4_000 }), fake.deps, memoryStore().store);
    expect(fake.calls[0]!.body).toMatchObject({ max_output_tokens: 50 });
    expect(result.headers['x-tollgate-max-tokens-lowered']).toBe('50');
  });

  it('a stream is relayed with the catalog id, its response.completed billed, the id kept', async () => {
    const fake = native();
    const { store, recorded } = memoryStore();
    const result = await createResponse(input({ stream: true }), fake.deps, store);
    const events = await drain(result);
    expect(events.map((e) => e.event)).toEqual([
      'response.created',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.completed',
    ]);
    expect(dataOf(events[0]).response).toMatchObject({ id: 'resp_up1', model: MODEL });
    expect(dataOf(events.at(-1)).response).toMatchObject({
      model: MODEL,
      usage: { input_tokens: 14, output_tokens: 3, total_tokens: 17, cost: 0.0015 },
    });
    expect(fake.settled).toMatchObject([{ promptTokens: 14, completionTokens: 3, model: MODEL }]);
    expect(recorded).toMatchObject([{ id: 'resp_up1', stateful: true }]);
  });

  it('an upstream failure releases the hold and settles nothing', async () => {
    const failure = new UpstreamError('openai', 'http', 'down', { status: 503 });
    const fake = native({ respond: () => Promise.reject(failure) });
    const { store, recorded } = memoryStore();
    const error = await refusal(createResponse(input(), fake.deps, store));
    expect(error.status).toBe(502);
    expect(fake.reservation.release).toHaveBeenCalledTimes(1);
    expect(fake.settled).toEqual([]);
    expect(recorded).toEqual([]);
  });
});
