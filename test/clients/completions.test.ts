/**
 * Legacy text completions through the official `openai` package (`client.completions.create`), pointed at a
 * running gateway with only the base URL and key changed: JSON and streamed answers from the sandbox models,
 * billed exactly at their usage; a model without text completions, a fallback in `models` that is unknown or
 * without them, and a key limited to other models refused.
 */
import OpenAI, { BadRequestError, NotFoundError, PermissionDeniedError } from 'openai';
import { describe, expect, it } from 'vitest';
import { clientGatewayPerFile, credits, nano, type ClientGateway } from './support.js';

let gateway: ClientGateway;
let account: { id: string; key: string };

clientGatewayPerFile((started, created) => {
  gateway = started;
  account = created;
});

function client(apiKey: string): OpenAI {
  return new OpenAI({ baseURL: gateway.baseURL, apiKey, maxRetries: 0 });
}

type UsageWithCost = OpenAI.CompletionUsage & { cost: number };

/** sandbox/echo's price: 0.00015 USD per 1,000 prompt tokens, 0.0006 per 1,000 completion tokens. */
const priceOf = (usage: OpenAI.CompletionUsage) => usage.prompt_tokens * 150 + usage.completion_tokens * 600;

describe('text completions', () => {
  it('completions.create: a text_completion continuing the prompt, billed at its usage, exactly', async () => {
    const before = await credits(gateway, account.key);
    const completion = await client(account.key).completions.create({
      model: 'sandbox/echo',
      prompt: 'Once upon a time',
      max_tokens: 3,
    });
    expect(completion.object).toBe('text_completion');
    expect(completion.model).toBe('sandbox/echo');
    expect(completion.choices).toHaveLength(1);
    // The echo model continues with the prompt itself, cut at max_tokens.
    expect(completion.choices[0]).toMatchObject({ index: 0, text: 'Once upon a', finish_reason: 'length' });
    const usage = completion.usage as UsageWithCost;
    expect(usage).toMatchObject({ prompt_tokens: 4, completion_tokens: 3, total_tokens: 7 });
    expect(nano(usage.cost)).toBe(priceOf(usage));
    const after = await credits(gateway, account.key);
    expect(nano(before) - nano(after)).toBe(nano(usage.cost));
  });

  it('several prompts, n, echo, stop and logprobs, as OpenAI numbers and shapes them', async () => {
    const completion = await client(account.key).completions.create({
      model: 'sandbox/echo',
      prompt: ['alpha beta gamma', 'one, two'],
      n: 2,
      echo: true,
      stop: ',',
      logprobs: 1,
    });
    expect(completion.choices.map((c) => c.index)).toEqual([0, 1, 2, 3]);
    expect(completion.choices.map((c) => c.text)).toEqual([
      'alpha beta gammaalpha beta gamma',
      'alpha beta gammaalpha beta gamma',
      'one, twoone',
      'one, twoone',
    ]);
    expect(completion.choices.map((c) => c.finish_reason)).toEqual(['stop', 'stop', 'stop', 'stop']);
    const logprobs = completion.choices[2]!.logprobs!;
    expect(logprobs.tokens!.join('')).toBe('one, twoone');
    expect(logprobs.text_offset![0]).toBe(0);
    expect(logprobs.token_logprobs![0]).toBeNull();
  });

  it('stream: text_completion chunks, the usage chunk when asked, billed exactly before [DONE]', async () => {
    const before = await credits(gateway, account.key);
    const stream = await client(account.key).completions.create({
      model: 'sandbox/lorem',
      prompt: 'Write something',
      max_tokens: 40,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: UsageWithCost | undefined;
    let finish: string | null = null;
    for await (const chunk of stream) {
      expect(chunk.object).toBe('text_completion');
      expect(chunk.model).toBe('sandbox/lorem');
      for (const choice of chunk.choices) {
        text += choice.text;
        finish = choice.finish_reason ?? finish;
      }
      if (chunk.usage) usage = chunk.usage as UsageWithCost;
    }
    expect(text.trim().split(' ').length).toBeGreaterThan(5);
    expect(finish).not.toBeNull();
    expect(usage!.completion_tokens).toBeGreaterThan(5);
    expect(usage!.completion_tokens).toBeLessThanOrEqual(40);
    expect(nano(usage!.cost)).toBe(priceOf(usage!));
    const after = await credits(gateway, account.key);
    expect(nano(before) - nano(after)).toBe(nano(usage!.cost));
  });

  it('a stream without include_usage carries no usage, and the same prompt the same text', async () => {
    const openai = client(account.key);
    const request = { model: 'sandbox/lorem', prompt: 'seeded', max_tokens: 20, seed: 7 };
    const stream = await openai.completions.create({ ...request, stream: true });
    let text = '';
    for await (const chunk of stream) {
      expect(chunk.usage ?? undefined).toBeUndefined();
      text += chunk.choices.map((c) => c.text).join('');
    }
    const whole = await openai.completions.create(request);
    expect(text).toBe(whole.choices[0]!.text);
  });

  it('a model without text completions is a BadRequestError naming `model`', async () => {
    const refused = await client(account.key)
      .completions.create({ model: 'sandbox/embed', prompt: 'x' })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(BadRequestError);
    expect((refused as BadRequestError).param).toBe('model');
    expect((refused as BadRequestError).message).toContain('capability=completion');
  });

  it('`models` and `timeout_ms` are taken; an unknown fallback is a NotFoundError, one without text completions a BadRequestError', async () => {
    const openai = client(account.key);
    type WithRouting = OpenAI.CompletionCreateParamsNonStreaming & { models: string[]; timeout_ms?: number };
    const request = (models: string[], timeout_ms?: number): WithRouting => ({
      model: 'sandbox/echo',
      prompt: 'Once upon a time',
      max_tokens: 3,
      models,
      ...(timeout_ms ? { timeout_ms } : {}),
    });
    const completion = await openai.completions.create(request(['sandbox/lorem'], 10_000));
    expect(completion.model).toBe('sandbox/echo');
    expect(completion.choices[0]!.text).toBe('Once upon a');
    const refused = (models: string[]) => openai.completions.create(request(models)).catch((e: unknown) => e);
    const unknown = await refused(['no-such-model']);
    expect(unknown).toBeInstanceOf(NotFoundError);
    expect((unknown as NotFoundError).param).toBe('models');
    const incapable = await refused(['sandbox/lorem', 'sandbox/embed']);
    expect(incapable).toBeInstanceOf(BadRequestError);
    expect((incapable as BadRequestError).param).toBe('models');
    expect((incapable as BadRequestError).message).toContain(
      "The model 'sandbox/embed' does not serve text completions; list those that do with GET /v1/models?capability=completion",
    );
  });

  it('bad input is a BadRequestError naming the field: logprobs above 5, best_of below n, a prompt past the context', async () => {
    const openai = client(account.key);
    const param = (request: Promise<unknown>) =>
      request.then(
        () => 'answered',
        (e: unknown) => (e as BadRequestError).param,
      );
    expect(await param(openai.completions.create({ model: 'sandbox/echo', prompt: 'x', logprobs: 6 }))).toBe(
      'logprobs',
    );
    expect(await param(openai.completions.create({ model: 'sandbox/echo', prompt: 'x', n: 3, best_of: 2 }))).toBe(
      'best_of',
    );
    const long = openai.completions.create({ model: 'sandbox/echo', prompt: ['short', 'word '.repeat(128_000)] });
    expect(await param(long)).toBe('prompt');
  });

  it('a key whose allow-list excludes the model is a PermissionDeniedError, and nothing is charged', async () => {
    const created = await gateway.admin('POST', `/admin/accounts/${account.id}/keys`, {
      permissions: 'project',
      models: ['sandbox/lorem'],
    });
    const limited = (created.body as { key: string }).key;
    const before = await credits(gateway, account.key);
    const refused = await client(limited)
      .completions.create({ model: 'sandbox/echo', prompt: 'hello' })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(PermissionDeniedError);
    expect(await credits(gateway, account.key)).toBe(before);
  });

  it('GET /v1/models?capability=completion lists the sandbox text models, not the embedding one', async () => {
    const ids: string[] = [];
    for await (const model of client(account.key).models.list({ query: { capability: 'completion' } }))
      ids.push(model.id);
    expect(ids).toEqual(expect.arrayContaining(['sandbox/echo', 'sandbox/lorem']));
    expect(ids).not.toContain('sandbox/embed');
  });
});
