/**
 * Every Response and every stream event POST /v1/responses answers is valid by OpenAI's own published schema
 * (openai/openai-openapi, extracted in test/fixtures/openai-responses/), on both paths: translated through chat
 * (Mistral here, and test keys' sandbox) and passed through to OpenAI (a local server speaking its Responses
 * format). Text, function and custom tool calls, reasoning, refusals, an answer cut at `max_output_tokens`, and
 * failures mid-stream, as JSON and as streams.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { startMockOpenAI, type Behavior, type MockOpenAI } from '../support/mock-openai.js';
import { responseErrors, streamEventErrors } from '../support/openai-responses-schema.js';

interface Reply {
  status: number;
  body: any;
  events: Array<{ event: string; data: any }>;
}

const TRANSLATED = 'mistral-small-2603';
const NATIVE = 'gpt-6-luna';

/** A chat answer cut short (at the token bound by default), as JSON and as a stream. */
function cutChatAnswer(stream: boolean, finish: 'length' | 'content_filter' = 'length'): Behavior {
  const usage = { prompt_tokens: 9, completion_tokens: 3, total_tokens: 12 };
  const base = { id: 'chatcmpl-cut', created: 1_700_000_000, model: 'mistral-small' };
  if (!stream)
    return {
      kind: 'raw',
      body: JSON.stringify({
        ...base,
        object: 'chat.completion',
        choices: [{ index: 0, message: { role: 'assistant', content: 'Once upon a' }, finish_reason: finish }],
        usage,
      }),
    };
  const chunk = (delta: object, finish: string | null = null) => ({
    ...base,
    object: 'chat.completion.chunk',
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const chunks = [
    chunk({ role: 'assistant', content: '' }),
    chunk({ content: 'Once upon' }),
    chunk({ content: ' a' }),
    chunk({}, finish),
    { ...base, object: 'chat.completion.chunk', choices: [], usage },
  ];
  return sseAnswer(chunks);
}

/** A chat answer that refuses (OpenAI's `refusal` in place of content), as JSON and as a stream. */
function refusingChatAnswer(stream: boolean): Behavior {
  const usage = { prompt_tokens: 9, completion_tokens: 4, total_tokens: 13 };
  const base = { id: 'chatcmpl-refused', created: 1_700_000_000, model: 'mistral-small' };
  if (!stream)
    return {
      kind: 'raw',
      body: JSON.stringify({
        ...base,
        object: 'chat.completion',
        choices: [
          {
            index: 0,
            message: { role: 'assistant', content: null, refusal: "I can't help with that." },
            finish_reason: 'stop',
          },
        ],
        usage,
      }),
    };
  const chunk = (delta: object, finish: string | null = null) => ({
    ...base,
    object: 'chat.completion.chunk',
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  return sseAnswer([
    chunk({ role: 'assistant', content: null, refusal: '' }),
    chunk({ refusal: "I can't" }),
    chunk({ refusal: ' help with that.' }),
    chunk({}, 'stop'),
    { ...base, object: 'chat.completion.chunk', choices: [], usage },
  ]);
}

const sseAnswer = (chunks: object[]): Behavior => ({
  kind: 'raw',
  headers: { 'content-type': 'text/event-stream' },
  body: `${chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('')}data: [DONE]\n\n`,
});

const CUSTOM_TOOL = { type: 'custom', name: 'apply_patch', description: 'Applies a patch' };
const FUNCTION_TOOL = {
  type: 'function',
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: true,
};
/** A function tool as a client may declare it: no `parameters`, no `strict` (OpenAI's Response names both). */
const BARE_TOOL = { type: 'function', name: 'get_time' };

const WEATHER_CALL = { name: 'get_weather', arguments: '{"city":"Paris"}', id: 'call_w' };
const PATCH_CALL = { name: 'apply_patch', arguments: JSON.stringify({ input: '*** Begin Patch' }) };
/** Codex's `exec` (a custom tool in its `functions` namespace). */
const EXEC_CALL = { name: 'exec', arguments: JSON.stringify({ input: 'ls' }) };
const FAILURE: Behavior = { kind: 'stream-error', afterChunks: 2, message: 'overloaded' };

/** The chat answer to a request, by its last message (a request names what it wants answered, whatever runs first). */
const CHAT_ANSWERS: Record<string, (stream: boolean) => Behavior> = {
  'Weather in Paris?': () => ({ kind: 'ok', toolCalls: [WEATHER_CALL] }),
  'Patch it': () => ({ kind: 'ok', toolCalls: [PATCH_CALL] }),
  'Tell a story': (stream) => cutChatAnswer(stream),
  'Tell a filtered story': (stream) => cutChatAnswer(stream, 'content_filter'),
  'Something bad': refusingChatAnswer,
  'Fail midway': () => FAILURE,
};

/** OpenAI's answer to a Responses request, by its input. */
const RESPONSES_ANSWERS: Record<string, Behavior> = {
  'Weather in Paris?': { kind: 'ok', toolCalls: [WEATHER_CALL] },
  'Answer without usage': { kind: 'ok', usage: false },
  'Fail midway': FAILURE,
};

function chatAnswer(body: any): Behavior | undefined {
  if (body.tools?.some((tool: any) => tool.function?.name === 'exec')) return { kind: 'ok', toolCalls: [EXEC_CALL] };
  const last = body.messages?.at(-1)?.content;
  return typeof last === 'string' ? CHAT_ANSWERS[last]?.(body.stream === true) : undefined;
}

describe("POST /v1/responses answers by OpenAI's published schema", () => {
  let gateway: TestGateway;
  let openai: MockOpenAI;
  let mistral: MockOpenAI;
  let key: string;

  beforeAll(async () => {
    openai = await startMockOpenAI({
      apiKey: 'sk-e2e',
      route: (body) => (typeof body.input === 'string' ? RESPONSES_ANSWERS[body.input] : undefined),
    });
    mistral = await startMockOpenAI({ route: chatAnswer });
    gateway = await startGateway({
      env: {
        OPENAI_API_KEY: 'sk-e2e',
        OPENAI_BASE_URL: openai.url,
        MISTRAL_API_KEY: 'mk-e2e',
        MISTRAL_BASE_URL: mistral.url,
      },
    });
    key = (await gateway.account()).key;
  });
  afterAll(async () => {
    await gateway?.close();
    await Promise.all([openai?.close(), mistral?.close()]);
  });

  async function respond(body: Record<string, unknown>, as = key): Promise<Reply> {
    const response = await fetch(`${gateway.baseURL}/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${as}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.headers.get('content-type')?.startsWith('text/event-stream'))
      return { status: response.status, body: JSON.parse(text), events: [] };
    const events = text
      .split('\n\n')
      .filter(Boolean)
      .map((block) => {
        const [head, data] = block.split('\n');
        return { event: head!.slice('event: '.length), data: JSON.parse(data!.slice('data: '.length)) };
      });
    return { status: response.status, body: undefined, events };
  }

  /** The Response, once checked against OpenAI's `Response` schema. */
  async function conformingResponse(body: Record<string, unknown>, as?: string): Promise<any> {
    const reply = await respond({ ...body, stream: false }, as);
    expect(reply.status).toBe(200);
    expect(responseErrors(reply.body)).toEqual([]);
    return reply.body;
  }

  /** The stream's events (their data), once each is checked against OpenAI's schema of its type. */
  async function conformingStream(body: Record<string, unknown>, as?: string): Promise<any[]> {
    const reply = await respond({ ...body, stream: true }, as);
    expect(reply.status).toBe(200);
    expect(reply.events.length).toBeGreaterThan(2);
    for (const { event, data } of reply.events) expect(event).toBe(data.type);
    expect(reply.events.flatMap(({ data }) => streamEventErrors(data))).toEqual([]);
    return reply.events.map(({ data }) => data);
  }

  const ofType = (events: any[], type: string) => events.filter((event) => event.type === type);

  describe('translated through chat', () => {
    it("text: output_text parts carry annotations and logprobs, in the Response and in every event's part", async () => {
      const response = await conformingResponse({ model: TRANSLATED, input: 'Say hello', instructions: 'Be brief' });
      expect(response.output[0].content).toEqual([
        { type: 'output_text', text: 'Hello from the mock upstream.', annotations: [], logprobs: [] },
      ]);

      const events = await conformingStream({ model: TRANSLATED, input: 'Say hello', metadata: { run: '1' } });
      for (const type of ['response.content_part.added', 'response.content_part.done'])
        expect(ofType(events, type)[0].part).toMatchObject({ type: 'output_text', annotations: [], logprobs: [] });
      expect(ofType(events, 'response.output_item.done')[0].item.content[0].logprobs).toEqual([]);
      const completed = ofType(events, 'response.completed')[0].response;
      expect(completed.output[0].content[0]).toMatchObject({ text: 'Hello from the mock upstream.', logprobs: [] });
    });

    it('function and custom tool calls, JSON and streamed', async () => {
      const tools = [FUNCTION_TOOL, BARE_TOOL];
      const request = { model: TRANSLATED, input: 'Weather in Paris?', tools, tool_choice: 'auto' };
      const response = await conformingResponse(request);
      expect(response.output[0]).toMatchObject({ type: 'function_call', call_id: 'call_w', name: 'get_weather' });
      expect(response.tools).toEqual([FUNCTION_TOOL, { ...BARE_TOOL, parameters: null, strict: null }]);
      const events = await conformingStream(request);
      expect(ofType(events, 'response.function_call_arguments.done')[0].arguments).toBe('{"city":"Paris"}');

      const custom = { model: TRANSLATED, input: 'Patch it', tools: [CUSTOM_TOOL] };
      expect((await conformingResponse(custom)).output[0]).toMatchObject({
        type: 'custom_tool_call',
        input: '*** Begin Patch',
      });
      const customEvents = await conformingStream(custom);
      expect(ofType(customEvents, 'response.custom_tool_call_input.done')[0].input).toBe('*** Begin Patch');
    });

    it('reasoning: the effort echoed and the reasoning tokens in the usage', async () => {
      const request = { model: TRANSLATED, input: 'Think', reasoning: { effort: 'low' } };
      const response = await conformingResponse(request);
      expect(response.reasoning).toMatchObject({ effort: 'low' });
      expect(response.usage.output_tokens_details.reasoning_tokens).toBeGreaterThan(0);
      const events = await conformingStream(request);
      expect(ofType(events, 'response.completed')[0].response.usage.output_tokens_details.reasoning_tokens).toBe(
        response.usage.output_tokens_details.reasoning_tokens,
      );
    });

    it('an answer cut at max_output_tokens is incomplete, its text part whole by the schema', async () => {
      const request = { model: TRANSLATED, input: 'Tell a story', max_output_tokens: 3 };
      const response = await conformingResponse(request);
      expect(response).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
      expect(response.output[0].content[0]).toEqual({
        type: 'output_text',
        text: 'Once upon a',
        annotations: [],
        logprobs: [],
      });
      const events = await conformingStream(request);
      const incomplete = ofType(events, 'response.incomplete')[0].response;
      expect(incomplete.output[0].content[0]).toMatchObject({ text: 'Once upon a', logprobs: [] });
      expect(ofType(events, 'response.completed')).toEqual([]);

      const filtered = await conformingResponse({ model: TRANSLATED, input: 'Tell a filtered story' });
      expect(filtered).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'content_filter' } });
    });

    it("a chat refusal is the message's refusal part, streamed as response.refusal.delta and .done", async () => {
      const request = { model: TRANSLATED, input: 'Something bad' };
      const response = await conformingResponse(request);
      expect(response.output).toHaveLength(1);
      expect(response.output[0]).toMatchObject({ type: 'message', role: 'assistant', status: 'completed' });
      expect(response.output[0].content).toEqual([{ type: 'refusal', refusal: "I can't help with that." }]);

      const events = await conformingStream(request);
      expect(ofType(events, 'response.refusal.delta').map((e) => e.delta)).toEqual(["I can't", ' help with that.']);
      expect(ofType(events, 'response.refusal.done')[0].refusal).toBe("I can't help with that.");
      expect(ofType(events, 'response.content_part.done')[0].part).toEqual({
        type: 'refusal',
        refusal: "I can't help with that.",
      });
      expect(ofType(events, 'response.output_text.delta')).toEqual([]);
      expect(ofType(events, 'response.completed')[0].response.output[0].content).toEqual(response.output[0].content);
    });

    it('a stream that fails midway ends with response.failed, whose error OpenAI defines', async () => {
      const events = await conformingStream({ model: TRANSLATED, input: 'Fail midway' });
      const failed = events.at(-1);
      expect(failed.type).toBe('response.failed');
      expect(failed.response).toMatchObject({ status: 'failed', error: { code: 'server_error' } });
      expect(failed.response.error.message).toContain("'mistral'");
      // The text written before the failure is the message's, closed as incomplete.
      expect(failed.response.output[0]).toMatchObject({ type: 'message', status: 'incomplete' });
      expect(failed.response.output[0].content[0]).toMatchObject({ text: 'part0 part1 ', logprobs: [] });
    });

    it("Codex's first turn (its tools in additional_tools items, namespaced and custom), JSON and streamed", async () => {
      const codex = JSON.parse(
        readFileSync(new URL('../clients/fixtures/codex-request.json', import.meta.url), 'utf8'),
      ) as Record<string, unknown>;
      const request = { ...codex, model: TRANSLATED };
      const call = { type: 'custom_tool_call', namespace: 'functions', name: 'exec', input: 'ls' };
      expect((await conformingResponse(request)).output[0]).toMatchObject(call);
      const events = await conformingStream(request);
      expect(ofType(events, 'response.output_item.done')[0].item).toMatchObject(call);
    });

    it("a test key's sandbox answer, JSON and streamed", async () => {
      const account = await gateway.account();
      const testKey = (await gateway.key(account.id, { environment: 'test' })).key;
      const response = await conformingResponse({ model: NATIVE, input: 'Hello sandbox' }, testKey);
      expect(response.output[0].content[0].logprobs).toEqual([]);
      await conformingStream({ model: NATIVE, input: 'Hello sandbox' }, testKey);
    });
  });

  describe('passed through to OpenAI', () => {
    it('text, with the billed usage and its cost', async () => {
      const response = await conformingResponse({ model: NATIVE, input: 'Say hello' });
      expect(response.model).toBe(NATIVE);
      expect(typeof response.usage.cost).toBe('number');
      const events = await conformingStream({ model: NATIVE, input: 'Say hello' });
      expect(typeof ofType(events, 'response.completed')[0].response.usage.cost).toBe('number');
    });

    it('function calls, reasoning and web searches', async () => {
      const request = {
        model: NATIVE,
        input: 'Weather in Paris?',
        tools: [FUNCTION_TOOL, { type: 'web_search' }],
        reasoning: { effort: 'low' },
      };
      const response = await conformingResponse(request);
      expect(response.output.map((item: any) => item.type)).toEqual([
        'reasoning',
        'web_search_call',
        'web_search_call',
        'function_call',
      ]);
      const events = await conformingStream(request);
      expect(ofType(events, 'response.web_search_call.completed')).toHaveLength(2);
    });

    it('an answer without usage gets the billed one, with the token details OpenAI requires', async () => {
      const response = await conformingResponse({ model: NATIVE, input: 'Answer without usage' });
      expect(response.usage).toMatchObject({
        input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
        output_tokens_details: { reasoning_tokens: 0 },
      });
      expect(response.usage.output_tokens).toBeGreaterThan(0);
      const events = await conformingStream({ model: NATIVE, input: 'Answer without usage' });
      expect(ofType(events, 'response.completed')[0].response.usage.output_tokens).toBeGreaterThan(0);
    });

    it('a stream that fails midway ends with an error event OpenAI defines', async () => {
      const events = await conformingStream({ model: NATIVE, input: 'Fail midway' });
      expect(events.at(-1)).toMatchObject({ type: 'error', param: null });
    });
  });
});
