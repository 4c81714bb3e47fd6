/** POST /v1/completions on fake dependencies: text completions through completeText and streamText. */
import { describe, expect, it } from 'vitest';
import { createCompletion, type RequestInput } from '../../src/gateway/index.js';
import { UpstreamError } from '../../src/providers/index.js';
import { countTextTokens } from '../../src/tokens/index.js';
import { DONE, type UpstreamTextCompletion } from '../../src/wire/index.js';
import { fakeDeps, streamOf, type Setup, inputOf, refusal, drain } from './fakes.js';

const ECHO = 'sandbox/echo';

const input = (body: Record<string, unknown> = {}, extra: Partial<RequestInput> = {}) =>
  inputOf({ model: ECHO, prompt: 'Say this' }, body, extra);

function textCompletion(
  text: string,
  usage?: { prompt_tokens: number; completion_tokens: number },
  index = 0,
): UpstreamTextCompletion {
  return {
    id: 'cmpl-up',
    object: 'text_completion',
    created: 1,
    model: 'upstream-name',
    choices: [{ index, text, logprobs: null, finish_reason: null }],
    ...(usage ? { usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } } : {}),
  };
}

/** A deployment that serves text completions (both methods, or it serves none). */
function completer(provider: Setup['provider'] = {}, setup: Omit<Setup, 'provider'> = {}) {
  return fakeDeps({
    provider: {
      completeText: () => Promise.resolve(textCompletion(' is a test', { prompt_tokens: 3, completion_tokens: 4 })),
      streamText: () => streamOf([textCompletion(' is'), textCompletion(' a test')]),
      ...provider,
    },
    admitAsRequested: true,
    ...setup,
  });
}

describe('a text completion as JSON', () => {
  it('bills the upstream usage, answers with the catalog id and the cost, and sends max_tokens 16 when unset', async () => {
    const fake = completer();
    const result = await createCompletion(input(), fake.deps);
    if (result.kind !== 'json') throw new Error('expected JSON');
    expect(fake.calls).toEqual([
      {
        method: 'completeText',
        body: { model: 'upstream-name', prompt: 'Say this', max_tokens: 16 },
        headers: undefined,
      },
    ]);
    expect(fake.wallet.reserve).toHaveBeenCalledWith(expect.objectContaining({ requestedMaxTokens: 16, choices: 1 }));
    expect(fake.settled).toMatchObject([{ promptTokens: 3, completionTokens: 4, model: ECHO }]);
    expect(result.body).toMatchObject({
      object: 'text_completion',
      model: ECHO,
      choices: [{ text: ' is a test' }],
      usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7, cost: 0.0015 },
    });
    expect(result.headers['x-tollgate-provider']).toBe('openai');
  });

  it("sends the client's max_tokens, and without the routing fields", async () => {
    const fake = completer();
    await createCompletion(input({ max_tokens: 40, models: [ECHO], timeout_ms: 20_000, suffix: '!' }), fake.deps);
    expect(fake.calls[0]!.body).toEqual({ model: 'upstream-name', prompt: 'Say this', suffix: '!', max_tokens: 40 });
  });

  it('a bound the budget lowered goes upstream and is told', async () => {
    const fake = completer({}, { lowerTo: 5 });
    const result = await createCompletion(input({ max_tokens: 400 }), fake.deps);
    expect(fake.calls[0]!.body).toMatchObject({ max_tokens: 5 });
    expect(result.headers['x-tollgate-max-tokens-lowered']).toBe('5');
  });

  it('without usage, what echo repeated of the prompt is not counted as completion', async () => {
    const fake = completer({ completeText: () => Promise.resolve(textCompletion('Say this is a test')) });
    await createCompletion(input({ echo: true }), fake.deps);
    expect(fake.settled).toHaveLength(1);
    expect(fake.settled[0]!.completionTokens).toBe(countTextTokens(' is a test'));
  });
});

describe('a text completion refused', () => {
  it('a model without the completion capability is 400 naming model, before anything is held', async () => {
    const fake = completer();
    const error = await refusal(createCompletion(input({ model: 'gpt-6-luna' }), fake.deps));
    expect([error.status, error.code, error.param]).toEqual([400, 'invalid_request', 'model']);
    expect(error.message).toContain('gpt-6-luna');
    expect(fake.wallet.reserve).not.toHaveBeenCalled();
    expect(fake.calls).toEqual([]);
  });

  it('a fallback without the capability is 400 naming models', async () => {
    const fake = completer();
    const error = await refusal(createCompletion(input({ models: ['gpt-6-luna'] }), fake.deps));
    expect([error.status, error.param]).toEqual([400, 'models']);
  });

  it('best_of below n is 400', async () => {
    const fake = completer();
    const error = await refusal(createCompletion(input({ n: 3, best_of: 2 }), fake.deps));
    expect([error.status, error.param]).toEqual([400, 'best_of']);
    expect(fake.wallet.reserve).not.toHaveBeenCalled();
  });

  it('a deployment whose provider does not complete text is a 400, never asked, and the hold is released', async () => {
    const fake = fakeDeps();
    const error = await refusal(createCompletion(input(), fake.deps));
    expect([error.status, error.param]).toEqual([400, 'model']);
    expect(fake.calls).toEqual([]);
    expect(fake.reservation.release).toHaveBeenCalledTimes(1);
    expect(fake.settled).toEqual([]);
  });

  it('an upstream failure releases the hold and settles nothing', async () => {
    const fake = completer({
      completeText: () => Promise.reject(new UpstreamError('openai', 'http', 'down', { status: 500 })),
    });
    const error = await refusal(createCompletion(input(), fake.deps));
    expect(error.status).toBe(502);
    expect(fake.reservation.release).toHaveBeenCalledTimes(1);
    expect(fake.settled).toEqual([]);
  });
});

describe('a streamed text completion', () => {
  it('yields text_completion chunks under the catalog id, then [DONE]; the usage chunk when asked', async () => {
    const fake = completer({
      streamText: () =>
        streamOf([
          textCompletion(' is'),
          textCompletion(' a test'),
          { ...textCompletion(''), choices: [], usage: { prompt_tokens: 3, completion_tokens: 3, total_tokens: 6 } },
        ]),
    });
    const result = await createCompletion(input({ stream: true, stream_options: { include_usage: true } }), fake.deps);
    expect(fake.calls[0]).toMatchObject({ method: 'streamText', body: { stream: true, max_tokens: 16 } });
    const events = await drain(result);
    expect(events.at(-1)).toEqual(DONE);
    const chunks = events.slice(0, -1).map((e) => e.data as UpstreamTextCompletion);
    expect(chunks.map((c) => c.object)).toEqual(['text_completion', 'text_completion', 'text_completion']);
    expect(chunks.map((c) => c.model)).toEqual([ECHO, ECHO, ECHO]);
    expect(chunks.slice(0, 2).map((c) => c.choices[0]!.text)).toEqual([' is', ' a test']);
    expect(chunks[2]).toMatchObject({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 3, cost: 0.0015 } });
    expect(fake.settled).toMatchObject([{ promptTokens: 3, completionTokens: 3, model: ECHO }]);
  });

  it('without usage from the upstream, the prompt echoed back is not counted as completion tokens', async () => {
    const fake = completer({
      streamText: () => streamOf([textCompletion('Say this'), textCompletion(' is a test')]),
    });
    const result = await createCompletion(input({ stream: true, echo: true }), fake.deps);
    const events = await drain(result);
    expect(events.at(-1)).toEqual(DONE);
    expect(events.slice(0, -1).every((e) => (e.data as UpstreamTextCompletion).usage === undefined)).toBe(true);
    expect(fake.settled).toHaveLength(1);
    expect(fake.settled[0]!.completionTokens).toBe(countTextTokens(' is a test'));
    expect(fake.settled[0]!.completionTokens).toBeLessThan(countTextTokens('Say this is a test'));
  });

  it('a stream that fails after its first chunk ends with an error envelope, no [DONE], charged for what was sent', async () => {
    async function* failing() {
      yield textCompletion(' is');
      await Promise.resolve();
      throw new UpstreamError('openai', 'http', 'boom', { status: 500 });
    }
    const fake = completer({ streamText: () => failing() });
    const events = await drain(await createCompletion(input({ stream: true }), fake.deps));
    expect(events).not.toContainEqual(DONE);
    expect(events.at(-1)!.data).toMatchObject({ error: { code: 'upstream_error' } });
    expect(fake.settled).toMatchObject([{ completionTokens: countTextTokens(' is') }]);
  });
});
