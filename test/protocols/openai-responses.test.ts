/** The Responses API's translation to and from chat: pure functions over plain data. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../src/errors/index.js';
import {
  ChatStreamTranslator,
  responseFromChat,
  toChatRequest,
  type ResponseMeta,
  type ResponseRequest,
} from '../../src/protocols/openai-responses/index.js';
import type { UpstreamCompletion, UpstreamChunk } from '../../src/providers/index.js';

function meta(): ResponseMeta {
  let n = 0;
  return { id: 'resp_1', createdAt: 1_800_000_000, model: 'm', newId: (prefix) => `${prefix}_${++n}` };
}

function refusal(request: ResponseRequest): GatewayError {
  try {
    toChatRequest(request);
  } catch (error) {
    if (error instanceof GatewayError) return error;
    throw error;
  }
  throw new Error('not refused');
}

describe('toChatRequest', () => {
  it('turns instructions into a system message and a string input into a user message', () => {
    expect(
      toChatRequest({ model: 'm', instructions: 'Be brief', input: 'Hi', max_output_tokens: 9, temperature: 0.5 }),
    ).toEqual({
      model: 'm',
      messages: [
        { role: 'system', content: 'Be brief' },
        { role: 'user', content: 'Hi' },
      ],
      max_tokens: 9,
      temperature: 0.5,
    });
  });

  it('turns items into messages: parts, parallel function calls in one assistant turn, their outputs, reasoning dropped', () => {
    const chat = toChatRequest({
      model: 'm',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'Look' },
            { type: 'input_image', image_url: 'https://x/y.png', detail: 'low' },
          ],
        },
        { type: 'reasoning', id: 'rs_1', summary: [] },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Checking.', annotations: [] }] },
        { type: 'function_call', call_id: 'c1', name: 'a', arguments: '{}' },
        { type: 'function_call', call_id: 'c2', name: 'b', arguments: '{"x":1}' },
        { type: 'function_call_output', call_id: 'c1', output: 'one' },
        { type: 'function_call_output', call_id: 'c2', output: [{ type: 'input_text', text: 'two' }] },
      ],
      stream: true,
    });
    expect(chat.messages).toEqual([
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Look' },
          { type: 'image_url', image_url: { url: 'https://x/y.png', detail: 'low' } },
        ],
      },
      {
        role: 'assistant',
        content: 'Checking.',
        tool_calls: [
          { id: 'c1', type: 'function', function: { name: 'a', arguments: '{}' } },
          { id: 'c2', type: 'function', function: { name: 'b', arguments: '{"x":1}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'one' },
      { role: 'tool', tool_call_id: 'c2', content: 'two' },
    ]);
    expect(chat.stream_options).toEqual({ include_usage: true });
  });

  it('maps function tools, tool_choice, text.format and reasoning effort', () => {
    const chat = toChatRequest({
      model: 'm',
      input: 'x',
      tools: [{ type: 'function', name: 'f', parameters: { type: 'object' }, strict: true }],
      tool_choice: { type: 'function', name: 'f' },
      text: { format: { type: 'json_object' } },
      reasoning: { effort: 'low', summary: 'auto' },
      parallel_tool_calls: false,
    });
    expect(chat).toMatchObject({
      tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' }, strict: true } }],
      tool_choice: { type: 'function', function: { name: 'f' } },
      response_format: { type: 'json_object' },
      reasoning_effort: 'low',
      parallel_tool_calls: false,
    });
  });

  it('refuses what only OpenAI itself can do, naming the field', () => {
    expect(refusal({ model: 'm', input: [{ type: 'item_reference', id: 'msg_1' }] }).param).toBe('input[0].type');
    expect(refusal({ model: 'm', input: 'x', tool_choice: { type: 'file_search' } }).param).toBe('tool_choice');
    expect(refusal({ model: 'm', input: [] }).param).toBe('input');
  });
});

const completion = (
  message: UpstreamCompletion['choices'][number]['message'],
  finish: 'stop' | 'length' | 'tool_calls',
) =>
  ({
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 1,
    model: 'm',
    choices: [{ index: 0, message, finish_reason: finish }],
    usage: {
      prompt_tokens: 10,
      completion_tokens: 4,
      total_tokens: 14,
      cost: 0.000012,
      prompt_tokens_details: { cached_tokens: 3 },
    },
  }) satisfies UpstreamCompletion;

describe('responseFromChat', () => {
  it('gives the text as a message item and usage in the Responses shape, with cost', () => {
    const response = responseFromChat(
      { model: 'm', input: 'x', max_output_tokens: 4 },
      completion({ role: 'assistant', content: 'Hi there' }, 'stop'),
      meta(),
    );
    expect(response).toMatchObject({
      id: 'resp_1',
      object: 'response',
      status: 'completed',
      max_output_tokens: 4,
      output: [
        {
          type: 'message',
          id: 'msg_1',
          role: 'assistant',
          status: 'completed',
          content: [{ type: 'output_text', text: 'Hi there', annotations: [] }],
        },
      ],
      usage: {
        input_tokens: 10,
        input_tokens_details: { cached_tokens: 3 },
        output_tokens: 4,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: 14,
        cost: 0.000012,
      },
    });
  });

  it('gives tool calls as function_call items, and a length stop as incomplete', () => {
    const calls = completion(
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }],
      },
      'tool_calls',
    );
    expect(responseFromChat({ model: 'm', input: 'x' }, calls, meta()).output).toEqual([
      { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'f', arguments: '{"a":1}', status: 'completed' },
    ]);
    const cut = responseFromChat(
      { model: 'm', input: 'x' },
      completion({ role: 'assistant', content: 'a' }, 'length'),
      meta(),
    );
    expect(cut).toMatchObject({ status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } });
  });
});

const chunk = (delta: UpstreamChunk['choices'][number]['delta'], finish: 'stop' | 'tool_calls' | null = null) =>
  ({
    id: 'c',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'm',
    choices: [{ index: 0, delta, finish_reason: finish }],
  }) satisfies UpstreamChunk;

describe('ChatStreamTranslator', () => {
  it("tells text and then a tool call as OpenAI's typed events, numbered, ending with response.completed", () => {
    const translator = new ChatStreamTranslator({ model: 'm', input: 'x' }, meta());
    const events = [
      ...translator.start(),
      ...translator.chunk(chunk({ role: 'assistant', content: '' })),
      ...translator.chunk(chunk({ content: 'Hel' })),
      ...translator.chunk(chunk({ content: 'lo' })),
      ...translator.chunk(
        chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '' } }] }),
      ),
      ...translator.chunk(chunk({ tool_calls: [{ index: 0, function: { arguments: '{"a":' } }] })),
      ...translator.chunk(chunk({ tool_calls: [{ index: 0, function: { arguments: '1}' } }] }, 'tool_calls')),
      ...translator.end({ prompt_tokens: 5, completion_tokens: 3, total_tokens: 8, cost: 0.1 }),
    ];
    expect(events.map((e) => e.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
      'response.output_text.delta',
      'response.output_text.delta',
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events[6]).toMatchObject({ item_id: 'msg_1', output_index: 0, content_index: 0, text: 'Hello' });
    expect(events[12]).toMatchObject({ output_index: 1, name: 'f', arguments: '{"a":1}' });
    const completed = events.at(-1)!.response;
    expect(completed).toMatchObject({
      status: 'completed',
      output: [
        { type: 'message', status: 'completed', content: [{ text: 'Hello' }] },
        { type: 'function_call', call_id: 'call_1', name: 'f', arguments: '{"a":1}', status: 'completed' },
      ],
      usage: { input_tokens: 5, output_tokens: 3, total_tokens: 8, cost: 0.1 },
    });
  });

  it('tells text then a refusal as two parts of one message, each with its own events and content_index', () => {
    const translator = new ChatStreamTranslator({ model: 'm', input: 'x' }, meta());
    translator.start();
    const events = [
      ...translator.chunk(chunk({ content: 'Well' })),
      ...translator.chunk(chunk({ refusal: 'No.' }, 'stop')),
      ...translator.end({ prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 }),
    ];
    expect(events.map((e) => [e.type, e.content_index])).toEqual([
      ['response.output_item.added', undefined],
      ['response.content_part.added', 0],
      ['response.output_text.delta', 0],
      ['response.output_text.done', 0],
      ['response.content_part.done', 0],
      ['response.content_part.added', 1],
      ['response.refusal.delta', 1],
      ['response.refusal.done', 1],
      ['response.content_part.done', 1],
      ['response.output_item.done', undefined],
      ['response.completed', undefined],
    ]);
    expect(events[0]!.item).toMatchObject({ type: 'message', content: [] });
    expect(events.at(-1)!.response).toMatchObject({
      output: [
        {
          type: 'message',
          content: [
            { type: 'output_text', text: 'Well', annotations: [], logprobs: [] },
            { type: 'refusal', refusal: 'No.' },
          ],
        },
      ],
    });
  });

  it("a failure after the start is response.failed with the error, its code one of OpenAI's", () => {
    const translator = new ChatStreamTranslator({ model: 'm', input: 'x' }, meta());
    translator.start();
    const [failed] = translator.fail({ code: 'upstream_error', message: 'cut' });
    expect(failed).toMatchObject({
      type: 'response.failed',
      sequence_number: 2,
      response: { status: 'failed', error: { code: 'server_error', message: 'cut' } },
    });
    const limited = new ChatStreamTranslator({ model: 'm', input: 'x' }, meta());
    const [throttled] = limited.fail({ code: 'rate_limit_exceeded', message: 'slow down' });
    expect(throttled!.response).toMatchObject({ error: { code: 'rate_limit_exceeded', message: 'slow down' } });
  });
});

/** The first turn of Codex CLI 0.169 (reduced): tools in an `additional_tools` item, grouped in namespaces. */
const codexRequest = (): ResponseRequest =>
  JSON.parse(readFileSync(new URL('../clients/fixtures/codex-request.json', import.meta.url), 'utf8'));

describe("Codex's requests (additional_tools, namespaces, custom tools)", () => {
  it('flattens the declared tools into chat tools: a custom tool takes one string, its grammar told', () => {
    const chat = toChatRequest(codexRequest());
    expect(chat.tools!.map((tool) => tool.function.name)).toEqual(['exec', 'wait', 'sleep']);
    const exec = chat.tools![0]!.function;
    expect(exec.parameters).toEqual({
      type: 'object',
      properties: { input: { type: 'string', description: 'The free-text input of the tool' } },
      required: ['input'],
      additionalProperties: false,
    });
    expect(exec.description).toContain('Run JavaScript code to orchestrate/compose tool calls');
    expect(exec.description).toContain('lark grammar:\nstart: SOURCE');
    expect(chat.tools![1]!.function).toMatchObject({
      name: 'wait',
      strict: false,
      parameters: { required: ['cell_id'] },
    });
    // The item that declared the tools is no message; Codex's other fields (include, prompt_cache_key, ...) are left out.
    expect(chat.messages.map((m) => m.role)).toEqual(['developer', 'user', 'user']);
    expect(chat).toMatchObject({ tool_choice: 'auto', parallel_tool_calls: false, reasoning_effort: 'medium' });
    expect(Object.keys(chat).sort()).toEqual(
      [
        'messages',
        'model',
        'parallel_tool_calls',
        'reasoning_effort',
        'stream',
        'stream_options',
        'tool_choice',
        'tools',
      ].sort(),
    );
  });

  it("the next turn: earlier calls as the assistant's tool calls, their outputs as tool messages, reasoning dropped", () => {
    const request = codexRequest();
    if (typeof request.input === 'string') throw new Error('fixture input is items');
    request.input.push(
      { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'opaque' },
      { type: 'custom_tool_call', call_id: 'call_1', name: 'exec', namespace: 'functions', input: 'text("hi")' },
      { type: 'custom_tool_call_output', call_id: 'call_1', output: 'Script completed\nhi' },
      { type: 'function_call', call_id: 'call_2', name: 'sleep', namespace: 'clock', arguments: '{"duration_ms":5}' },
      { type: 'function_call_output', call_id: 'call_2', output: [{ type: 'input_text', text: 'slept' }] },
    );
    expect(toChatRequest(request).messages.slice(3)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'exec', arguments: '{"input":"text(\\"hi\\")"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'Script completed\nhi' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_2', type: 'function', function: { name: 'sleep', arguments: '{"duration_ms":5}' } }],
      },
      { role: 'tool', tool_call_id: 'call_2', content: 'slept' },
    ]);
  });

  it('a name two namespaces share becomes <namespace>__<name> in chat, and goes back as the name and its namespace', () => {
    const tool = (name: string) => ({ type: 'function', name, parameters: { type: 'object' } });
    const request: ResponseRequest = {
      model: 'm',
      input: [{ type: 'function_call', call_id: 'c0', name: 'list', namespace: 'files', arguments: '{}' }],
      tools: [
        { type: 'namespace', name: 'crm', description: 'CRM', tools: [tool('list'), tool('get')] },
        { type: 'namespace', name: 'files', description: 'Files', tools: [tool('list')] },
        { type: 'custom', name: 'apply_patch', format: { type: 'text' } },
      ],
      tool_choice: { type: 'custom', name: 'apply_patch' },
    };
    const chat = toChatRequest(request);
    expect(chat.tools!.map((t) => t.function.name)).toEqual(['crm__list', 'get', 'files__list', 'apply_patch']);
    expect(chat.messages[0]!.tool_calls![0]!.function.name).toBe('files__list');
    expect(chat.tool_choice).toEqual({ type: 'function', function: { name: 'apply_patch' } });

    const calls = [
      { id: 'c1', type: 'function' as const, function: { name: 'files__list', arguments: '{}' } },
      { id: 'c2', type: 'function' as const, function: { name: 'get', arguments: '{"id":1}' } },
      {
        id: 'c3',
        type: 'function' as const,
        function: { name: 'apply_patch', arguments: '{"input":"*** Begin Patch"}' },
      },
    ];
    const response = responseFromChat(
      request,
      completion({ role: 'assistant', content: null, tool_calls: calls }, 'tool_calls'),
      meta(),
    );
    expect(response.output).toEqual([
      {
        type: 'function_call',
        id: 'fc_1',
        call_id: 'c1',
        name: 'list',
        namespace: 'files',
        arguments: '{}',
        status: 'completed',
      },
      {
        type: 'function_call',
        id: 'fc_2',
        call_id: 'c2',
        name: 'get',
        namespace: 'crm',
        arguments: '{"id":1}',
        status: 'completed',
      },
      {
        type: 'custom_tool_call',
        id: 'fc_3',
        call_id: 'c3',
        name: 'apply_patch',
        input: '*** Begin Patch',
        status: 'completed',
      },
    ]);
  });

  it('streams a custom tool call as output_item.added, custom_tool_call_input.delta and .done, output_item.done', () => {
    const translator = new ChatStreamTranslator(codexRequest(), meta());
    const call = (args: string, name?: string) =>
      chunk({
        tool_calls: [
          {
            index: 0,
            ...(name ? { id: 'call_9', type: 'function' as const } : {}),
            function: { ...(name ? { name } : {}), arguments: args },
          },
        ],
      });
    const events = [
      ...translator.start(),
      ...translator.chunk(call('', 'exec')),
      ...translator.chunk(call('{"input":"text(')),
      ...translator.chunk(call('\\"hello\\")"}')),
      ...translator.end({ prompt_tokens: 5, completion_tokens: 3, total_tokens: 8, cost: 0 }),
    ];
    expect(events.map((e) => e.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.custom_tool_call_input.delta',
      'response.custom_tool_call_input.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events[2]!.item).toEqual({
      type: 'custom_tool_call',
      id: 'fc_1',
      call_id: 'call_9',
      name: 'exec',
      namespace: 'functions',
      input: '',
      status: 'in_progress',
    });
    expect(events[3]).toMatchObject({ item_id: 'fc_1', output_index: 0, delta: 'text("hello")' });
    expect(events[4]).toMatchObject({ item_id: 'fc_1', output_index: 0, input: 'text("hello")' });
    expect(events[5]!.item).toMatchObject({ type: 'custom_tool_call', input: 'text("hello")', status: 'completed' });
    expect(events[6]!.response).toMatchObject({ output: [{ type: 'custom_tool_call', input: 'text("hello")' }] });
  });

  it('leaves hosted tools out wherever they are declared, and refuses item types that carry content chat cannot say', () => {
    const declared = { type: 'additional_tools', role: 'developer', tools: [{ type: 'web_search' }] };
    const namespaced = { type: 'namespace', name: 'ns', description: '', tools: [{ type: 'file_search' }] };
    const fn = { type: 'function', name: 'f', parameters: { type: 'object', properties: {} } };
    const chat = toChatRequest({
      model: 'm',
      input: [declared, { role: 'user', content: 'x' }],
      tools: [{ type: 'web_search' }, namespaced, fn],
    });
    expect(chat.tools?.map((tool) => tool.function.name)).toEqual(['f']);
    expect(refusal({ model: 'm', input: [{ type: 'compaction', encrypted_content: 'x' }] }).param).toBe(
      'input[0].type',
    );
  });
});
