/** Anthropic's Messages API in chat's terms and back: the pure translations POST /v1/messages is built on. */
import { describe, expect, it } from 'vitest';
import {
  MessagesStreamWriter,
  anthropicErrorBody,
  messageFromCompletion,
  messagesUsage,
  toChatRequest,
  type MessagesRequest,
} from '../../src/protocols/anthropic-messages/index.js';
import type { FinishReason, StreamEvent, UpstreamChunk } from '../../src/wire/index.js';

type Delta = UpstreamChunk['choices'][number]['delta'];

/** Each event's name, and its data as the client reads it (serialised as the HTTP edge does). */
const parse = (events: StreamEvent[]) =>
  events.map(({ event, data }) => ({ name: event, data: JSON.parse(JSON.stringify(data)) }));

describe('toChatRequest', () => {
  it('turns system, blocks, tool use and tool results into chat messages', () => {
    const request: MessagesRequest = {
      model: 'm',
      max_tokens: 100,
      system: [
        { type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } },
        { type: 'text', text: 'Be kind.' },
      ],
      stop_sequences: ['END'],
      temperature: 0.5,
      top_k: 5,
      stream: true,
      metadata: { user_id: 'u-1' },
      tools: [
        { name: 'search', description: 'Search', input_schema: { type: 'object' } },
        { type: 'web_search_20250305', name: 'web_search' },
      ],
      tool_choice: { type: 'any', disable_parallel_tool_use: true },
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Look at this' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
            { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'hmm', signature: 'sig' },
            { type: 'text', text: 'Searching.' },
            { type: 'tool_use', id: 'toolu_1', name: 'search', input: { q: 'x' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: 'found' }] },
            { type: 'text', text: 'Thanks' },
          ],
        },
      ],
    };
    expect(toChatRequest(request)).toEqual({
      model: 'm',
      max_tokens: 100,
      stop: ['END'],
      temperature: 0.5,
      stream: true,
      stream_options: { include_usage: true },
      user: 'u-1',
      tools: [
        { type: 'function', function: { name: 'search', description: 'Search', parameters: { type: 'object' } } },
      ],
      tool_choice: 'required',
      parallel_tool_calls: false,
      messages: [
        { role: 'system', content: 'Be brief.\nBe kind.' },
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Look at this' },
            { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
            { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
          ],
        },
        {
          role: 'assistant',
          content: 'Searching.',
          tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'search', arguments: '{"q":"x"}' } }],
        },
        { role: 'tool', tool_call_id: 'toolu_1', content: 'found' },
        { role: 'user', content: [{ type: 'text', text: 'Thanks' }] },
      ],
    });
  });

  it('a named tool choice, a string content and an error result', () => {
    const chat = toChatRequest({
      model: 'm',
      max_tokens: 1,
      tools: [{ name: 'f', input_schema: { type: 'object' } }],
      tool_choice: { type: 'tool', name: 'f' },
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'f', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: 'boom', is_error: true }] },
      ],
    });
    expect(chat.tool_choice).toEqual({ type: 'function', function: { name: 'f' } });
    expect(chat.messages).toEqual([
      { role: 'user', content: 'hi' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 't', type: 'function', function: { name: 'f', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 't', content: 'Error: boom' },
    ]);
  });
});

describe('messageFromCompletion', () => {
  it('text and tool calls become blocks; finish reasons become stop reasons; usage is what was billed', () => {
    const message = messageFromCompletion('msg_1', {
      id: 'chatcmpl-1',
      object: 'chat.completion',
      created: 1,
      model: 'sandbox/echo',
      choices: [
        {
          index: 0,
          message: {
            role: 'assistant',
            content: 'Let me look.',
            tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'f', arguments: '{"a":1}' } }],
          },
          finish_reason: 'tool_calls',
          logprobs: null,
        },
      ],
      usage: { prompt_tokens: 10, completion_tokens: 4, total_tokens: 14 },
    });
    expect(message).toEqual({
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'sandbox/echo',
      content: [
        { type: 'text', text: 'Let me look.' },
        { type: 'tool_use', id: 'call_1', name: 'f', input: { a: 1 } },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: { input_tokens: 10, output_tokens: 4 },
    });
  });
});

describe('MessagesStreamWriter', () => {
  const chunk = (delta: Delta, finish: FinishReason | null = null, usage?: UpstreamChunk['usage']): UpstreamChunk => ({
    id: 'c',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'm',
    choices: usage ? [] : [{ index: 0, delta, finish_reason: finish, logprobs: null }],
    ...(usage ? { usage } : {}),
  });

  it("writes Anthropic's event sequence: start, ping, blocks, message_delta with usage and cost, stop", () => {
    const writer = new MessagesStreamWriter('msg_1', 'm', 12);
    const events = parse([
      ...writer.write(chunk({ role: 'assistant', content: '' })),
      ...writer.write(chunk({ content: 'Hel' })),
      ...writer.write(chunk({ content: 'lo' })),
      ...writer.write(
        chunk({ tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'f', arguments: '' } }] }),
      ),
      ...writer.write(chunk({ tool_calls: [{ index: 0, function: { arguments: '{"a":' } }] })),
      ...writer.write(chunk({ tool_calls: [{ index: 0, function: { arguments: '1}' } }] })),
      ...writer.write(chunk({}, 'tool_calls')),
      ...writer.write(chunk({}, null, { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19, cost: 0.000123 })),
      ...writer.end(),
    ]);
    expect(events.map((e) => e.name)).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'content_block_start',
      'content_block_delta',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(events[0]!.data.message).toMatchObject({
      id: 'msg_1',
      model: 'm',
      usage: { input_tokens: 12, output_tokens: 0 },
    });
    expect(events[3]!.data).toEqual({
      type: 'content_block_delta',
      index: 0,
      delta: { type: 'text_delta', text: 'Hel' },
    });
    expect(events[6]!.data).toEqual({
      type: 'content_block_start',
      index: 1,
      content_block: { type: 'tool_use', id: 'call_1', name: 'f', input: {} },
    });
    expect(events[8]!.data.delta).toEqual({ type: 'input_json_delta', partial_json: '1}' });
    expect(events[10]!.data).toEqual({
      type: 'message_delta',
      delta: { stop_reason: 'tool_use', stop_sequence: null },
      usage: { input_tokens: 12, output_tokens: 7, cost: 0.000123 },
    });
  });

  it('a stream cut short still ends with message_delta and message_stop once', () => {
    const writer = new MessagesStreamWriter('msg_2', 'm', 3);
    const events = parse([...writer.write(chunk({ content: 'x' }, 'length')), ...writer.end(), ...writer.end()]);
    expect(events.map((e) => e.name)).toEqual([
      'message_start',
      'ping',
      'content_block_start',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(events[5]!.data.delta.stop_reason).toBe('max_tokens');
  });
});

describe('anthropicErrorBody', () => {
  it.each([
    [400, 'invalid_request_error'],
    [401, 'authentication_error'],
    [402, 'billing_error'],
    [403, 'permission_error'],
    [404, 'not_found_error'],
    [413, 'request_too_large'],
    [429, 'rate_limit_error'],
    [500, 'api_error'],
    [503, 'overloaded_error'],
    [529, 'overloaded_error'],
  ])('status %i is %s', (status, type) => {
    expect(anthropicErrorBody(status, 'why')).toEqual({ type: 'error', error: { type, message: 'why' } });
  });
});

describe('messagesUsage', () => {
  it("tells cache reads and writes apart from input_tokens, as Anthropic's usage does", () => {
    const usage = {
      prompt_tokens: 1_000,
      completion_tokens: 20,
      prompt_tokens_details: { cached_tokens: 700 },
      cache_creation_input_tokens: 200,
    };
    expect(messagesUsage(usage)).toEqual({
      input_tokens: 100,
      output_tokens: 20,
      cache_read_input_tokens: 700,
      cache_creation_input_tokens: 200,
    });
    expect(messagesUsage({ prompt_tokens: 5, completion_tokens: 1 })).toEqual({ input_tokens: 5, output_tokens: 1 });
  });
});
