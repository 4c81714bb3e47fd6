/**
 * Anthropic Messages answers -> OpenAI chat completions: the JSON message, the stream events and the errors.
 * Anthropic's JSON is checked against the wire contract's `UpstreamAnthropic*` schemas before it is read: what
 * fails its check is a `protocol` UpstreamError.
 */
import { TypeCompiler } from '@sinclair/typebox/compiler';
import {
  ANTHROPIC_ERROR_STATUS,
  UpstreamAnthropicEventSchemas,
  UpstreamAnthropicMessageSchema,
  isObject,
  type UpstreamAnthropicMessage,
} from '../../wire/index.js';
import { UpstreamError } from '../provider.js';
import { eventDataJson } from '../sse.js';
import type { FinishReason, ToolCall, UpstreamChunk, UpstreamCompletion, UpstreamUsage } from '../types.js';
import { JSON_TOOL } from './request.js';

const MessageCheck = TypeCompiler.Compile(UpstreamAnthropicMessageSchema);
const EventChecks = {
  message_start: TypeCompiler.Compile(UpstreamAnthropicEventSchemas.message_start),
  content_block_start: TypeCompiler.Compile(UpstreamAnthropicEventSchemas.content_block_start),
  content_block_delta: TypeCompiler.Compile(UpstreamAnthropicEventSchemas.content_block_delta),
  message_delta: TypeCompiler.Compile(UpstreamAnthropicEventSchemas.message_delta),
};
const EVENT_CHECKS = new Map<string, { Check(value: unknown): boolean }>(Object.entries(EventChecks));

/** Whether Anthropic's message is one tollgate can read (its content blocks, above all). */
export function isReadableMessage(json: unknown): json is UpstreamAnthropicMessage {
  return MessageCheck.Check(json);
}

/** Whether a stream event of this type is one tollgate can read; types it does not read pass. */
export const isReadableEvent = (type: string, event: unknown): boolean => EVENT_CHECKS.get(type)?.Check(event) ?? true;

const FINISH: Record<string, FinishReason> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
};

function finishReason(stop: string | null | undefined, jsonTool: boolean): FinishReason | null {
  if (!stop) return null;
  if (jsonTool && stop === 'tool_use') return 'stop';
  return FINISH[stop] ?? 'stop';
}

/**
 * Anthropic's usage in OpenAI's chat shape, or undefined when Anthropic did not report both counts (the gateway
 * then counts itself rather than charge an answer for zero tokens). `prompt_tokens` is every input token: the plain
 * ones, the cache reads (`prompt_tokens_details.cached_tokens`, as OpenAI reports them) and the cache writes;
 * `completion_tokens` is Anthropic's output, thinking included. Anthropic's own fields stay alongside, so that each
 * kind is billed at its price: `cache_creation_input_tokens` (the writes, split by `cache_creation` into 5-minute
 * and 1-hour ones), `cache_read_input_tokens`, `server_tool_use` (web searches) and `service_tier`. Counts that are
 * not numbers are passed on (as NaN) for the gateway to refuse.
 */
export function toUsage(usage: unknown): UpstreamUsage | undefined {
  if (!isObject(usage) || usage.input_tokens === undefined || usage.output_tokens === undefined) return undefined;
  const writes = optionalCount(usage.cache_creation_input_tokens);
  const reads = optionalCount(usage.cache_read_input_tokens);
  const prompt = reportedCount(usage.input_tokens) + writes + reads;
  const completion = reportedCount(usage.output_tokens);
  const split = usage.cache_creation;
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: reads },
    cache_creation_input_tokens: writes,
    cache_read_input_tokens: reads,
    ...(isObject(split)
      ? {
          cache_creation: {
            ephemeral_5m_input_tokens: optionalCount(split.ephemeral_5m_input_tokens),
            ephemeral_1h_input_tokens: optionalCount(split.ephemeral_1h_input_tokens),
          },
        }
      : {}),
    ...(isObject(usage.server_tool_use) ? { server_tool_use: usage.server_tool_use } : {}),
    ...(typeof usage.service_tier === 'string' ? { service_tier: usage.service_tier } : {}),
  };
}

/** A count Anthropic may leave out or null: 0 then. */
const optionalCount = (value: unknown): number => (typeof value === 'number' ? value : 0);

/** A count Anthropic reported: its number, or NaN when it is none, which the gateway's count check refuses. */
const reportedCount = (value: unknown): number => (typeof value === 'number' ? value : NaN);

export function fromAnthropicMessage(provider: string, json: unknown, jsonTool: boolean): UpstreamCompletion {
  if (!isObject(json) || !Array.isArray(json.content))
    throw new UpstreamError(provider, 'protocol', `${provider} answered with JSON that is not a message`);
  if (!MessageCheck.Check(json)) {
    const at = MessageCheck.Errors(json).First()?.path ?? '';
    throw new UpstreamError(provider, 'protocol', `${provider} answered with a message tollgate cannot read (${at})`);
  }
  const message: UpstreamAnthropicMessage = json;
  let text = '';
  const toolCalls: ToolCall[] = [];
  for (const block of message.content) {
    if (block.type === 'text') text += typeof block.text === 'string' ? block.text : '';
    else if (block.type === 'tool_use' && typeof block.id === 'string' && typeof block.name === 'string') {
      const args = JSON.stringify(block.input ?? {});
      if (jsonTool && block.name === JSON_TOOL) text += args;
      else toolCalls.push({ id: block.id, type: 'function', function: { name: block.name, arguments: args } });
    }
  }
  return {
    id: message.id ?? '',
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: message.model ?? '',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: toolCalls.length && !text ? null : text,
          ...(toolCalls.length ? { tool_calls: toolCalls } : {}),
          refusal: null,
        },
        logprobs: null,
        finish_reason: finishReason(message.stop_reason, jsonTool),
      },
    ],
    ...withUsage(toUsage(message.usage)),
  };
}

const withUsage = (usage: UpstreamUsage | undefined) => (usage ? { usage } : {});

/** An `error` event (or an error body): the status its type stands for, so routing and mapping treat it alike. */
export function anthropicError(provider: string, json: unknown): UpstreamError {
  const error = isObject(json) && isObject(json.error) ? json.error : undefined;
  const status = ANTHROPIC_ERROR_STATUS[typeof error?.type === 'string' ? error.type : ''] ?? 502;
  const message = typeof error?.message === 'string' ? error.message : `${provider} reported an error`;
  return new UpstreamError(provider, 'http', message, { status });
}

/**
 * Translates Anthropic's stream events one at a time into OpenAI chunks (null when an event carries nothing for
 * the client: ping, block stops). Text deltas become content, tool_use blocks become tool_calls deltas. Each event
 * the translation reads is checked against its schema first.
 */
export class StreamTranslator {
  private id = '';
  private model = '';
  private readonly created = Math.floor(Date.now() / 1000);
  /** The token counts reported so far (message_start's, then message_delta's). */
  private readonly usage: Record<string, unknown> = {};
  /** Content-block index -> OpenAI tool_calls index; -1 for the JSON-mode tool (its input is content). */
  private readonly tools = new Map<number | undefined, number>();
  private toolCount = 0;
  /** A stop reason arrived: the answer is complete. */
  finished = false;
  /** message_stop arrived: the stream is over. */
  ended = false;

  constructor(
    private readonly provider: string,
    private readonly jsonTool: boolean,
  ) {}

  translate(type: string, data: string): UpstreamChunk | null {
    const event = eventDataJson(this.provider, data);
    if (!isObject(event)) throw this.malformed(data);
    switch (typeof event.type === 'string' ? event.type : type) {
      case 'message_start': {
        if (!EventChecks.message_start.Check(event)) throw this.malformed(data);
        const { message } = event;
        this.id = message.id ?? '';
        this.model = message.model ?? '';
        Object.assign(this.usage, isObject(message.usage) ? message.usage : {});
        // The prompt as Anthropic counted it (cache reads and writes apart), for a stream cut before its end.
        const prompt = toUsage(this.usage);
        const first = this.chunk({ role: 'assistant', content: '' });
        return prompt ? { ...first, usage: prompt } : first;
      }
      case 'content_block_start': {
        if (!EventChecks.content_block_start.Check(event)) throw this.malformed(data);
        const block = event.content_block;
        if (block.type === 'text')
          return typeof block.text === 'string' && block.text ? this.chunk({ content: block.text }) : null;
        if (block.type !== 'tool_use' || typeof block.id !== 'string' || typeof block.name !== 'string') return null;
        if (this.jsonTool && block.name === JSON_TOOL) {
          this.tools.set(event.index, -1);
          return null;
        }
        const index = this.toolCount++;
        this.tools.set(event.index, index);
        return this.chunk({
          tool_calls: [{ index, id: block.id, type: 'function', function: { name: block.name, arguments: '' } }],
        });
      }
      case 'content_block_delta': {
        if (!EventChecks.content_block_delta.Check(event)) throw this.malformed(data);
        const { delta } = event;
        if (delta.type === 'text_delta' && typeof delta.text === 'string') return this.chunk({ content: delta.text });
        // Thinking and signature deltas stay upstream.
        if (delta.type !== 'input_json_delta' || typeof delta.partial_json !== 'string') return null;
        const index = this.tools.get(event.index);
        if (index === undefined) return null;
        if (index === -1) return this.chunk({ content: delta.partial_json });
        return this.chunk({ tool_calls: [{ index, function: { arguments: delta.partial_json } }] });
      }
      case 'message_delta': {
        if (!EventChecks.message_delta.Check(event)) throw this.malformed(data);
        Object.assign(this.usage, stripNulls(isObject(event.usage) ? event.usage : undefined));
        const reason = finishReason(event.delta?.stop_reason, this.jsonTool);
        if (!reason) return null;
        this.finished = true;
        return this.chunk({}, reason);
      }
      case 'message_stop':
        this.ended = true;
        return this.usageChunk();
      case 'error':
        throw anthropicError(this.provider, event);
      default:
        return null; // ping, content_block_stop and event types added later
    }
  }

  /** The closing chunk: usage from message_start and message_delta, choices empty (null if they reported none). */
  usageChunk(): UpstreamChunk | null {
    const usage = toUsage(this.usage);
    return usage
      ? { id: this.id, object: 'chat.completion.chunk', created: this.created, model: this.model, choices: [], usage }
      : null;
  }

  private malformed(data: string): UpstreamError {
    return new UpstreamError(
      this.provider,
      'protocol',
      `${this.provider} sent a stream event tollgate cannot read: ${data.slice(0, 200)}`,
    );
  }

  private chunk(delta: UpstreamChunk['choices'][number]['delta'], reason: FinishReason | null = null): UpstreamChunk {
    return {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: reason }],
    };
  }
}

function stripNulls(value: Record<string, unknown> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value ?? {})) if (v != null) out[key] = v;
  return out;
}
