/** Anthropic Messages answers -> OpenAI chat completions: the JSON message, the stream events and the errors. */
import { UpstreamError } from '../provider.js';
import { eventDataJson } from '../sse.js';
import { isObject } from '../../wire/index.js';
import type { UpstreamCompletion, UpstreamChunk, FinishReason, ToolCall, UpstreamUsage } from '../types.js';
import { JSON_TOOL } from './request.js';

interface AnthropicUsage {
  input_tokens?: number;
  output_tokens?: number;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
}

interface AnthropicBlock {
  type: string;
  text?: string;
  id?: string;
  name?: string;
  input?: unknown;
}

interface AnthropicMessage {
  id: string;
  type: 'message';
  model: string;
  content: AnthropicBlock[];
  stop_reason: string | null;
  usage?: AnthropicUsage;
}

const FINISH: Record<string, FinishReason> = {
  end_turn: 'stop',
  stop_sequence: 'stop',
  pause_turn: 'stop',
  max_tokens: 'length',
  model_context_window_exceeded: 'length',
  tool_use: 'tool_calls',
  refusal: 'content_filter',
};

/** The HTTP status an in-stream error type stands for. */
const ERROR_STATUS: Record<string, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
};

function finishReason(stop: string | null | undefined, jsonTool: boolean): FinishReason | null {
  if (!stop) return null;
  if (jsonTool && stop === 'tool_use') return 'stop';
  return FINISH[stop] ?? 'stop';
}

/**
 * UpstreamUsage by OpenAI's count, or undefined when Anthropic did not report both counts (the gateway then counts
 * itself rather than charge an answer for zero tokens). Counts that are not numbers are passed on for the gateway
 * to refuse.
 */
export function toUsage(usage: AnthropicUsage | undefined): UpstreamUsage | undefined {
  if (
    typeof usage !== 'object' ||
    usage === null ||
    usage.input_tokens === undefined ||
    usage.output_tokens === undefined
  )
    return undefined;
  // Cached prompt tokens are prompt tokens too: Anthropic reports them apart from input_tokens.
  const cached = (usage.cache_creation_input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0);
  const prompt = usage.input_tokens + cached;
  const completion = usage.output_tokens;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

const isString = (value: unknown): value is string => typeof value === 'string';

/** A content block tollgate can read: text with a string text (or none), tool_use with its id and name; other types are skipped. */
function isBlock(block: unknown): block is AnthropicBlock {
  if (!isObject(block) || !isString(block.type)) return false;
  if (block.type === 'text') return block.text === undefined || isString(block.text);
  if (block.type === 'tool_use') return isString(block.id) && isString(block.name);
  return true;
}

/** A message tollgate can read: its content blocks; the other fields pass through unchecked. */
function isMessage(json: Record<string, unknown>): json is Record<string, unknown> & AnthropicMessage {
  return Array.isArray(json.content) && json.content.every(isBlock);
}

export function fromAnthropicMessage(provider: string, json: unknown, jsonTool: boolean): UpstreamCompletion {
  if (!isObject(json) || !Array.isArray(json.content)) {
    throw new UpstreamError(provider, 'protocol', `${provider} answered with JSON that is not a message`);
  }
  const message = json;
  if (!isMessage(message)) {
    throw new UpstreamError(
      provider,
      'protocol',
      `${provider} answered with a message whose content blocks are malformed`,
    );
  }
  let text = '';
  const toolCalls: ToolCall[] = [];
  for (const block of message.content) {
    if (block.type === 'text') text += block.text ?? '';
    else if (block.type === 'tool_use') {
      const args = JSON.stringify(block.input ?? {});
      if (jsonTool && block.name === JSON_TOOL) text += args;
      else toolCalls.push({ id: block.id!, type: 'function', function: { name: block.name!, arguments: args } });
    }
  }
  return {
    id: message.id,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: message.model,
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
  const status = ERROR_STATUS[typeof error?.type === 'string' ? error.type : ''] ?? 502;
  return new UpstreamError(provider, 'http', String(error?.message ?? `${provider} reported an error`), { status });
}

/**
 * Translates Anthropic's stream events one at a time into OpenAI chunks (null when an event carries nothing for
 * the client: ping, block stops). Text deltas become content, tool_use blocks become tool_calls deltas.
 */
export class StreamTranslator {
  private id = '';
  private model = '';
  private readonly created = Math.floor(Date.now() / 1000);
  private readonly usage: AnthropicUsage = {};
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
    return this.translateEvent(type, event as StreamEvent, data);
  }

  private translateEvent(type: string, event: StreamEvent, data: string): UpstreamChunk | null {
    switch (event.type ?? type) {
      case 'message_start':
        this.id = event.message?.id ?? '';
        this.model = event.message?.model ?? '';
        Object.assign(this.usage, isObject(event.message?.usage) ? event.message.usage : {});
        return this.chunk({ role: 'assistant', content: '' });
      case 'content_block_start': {
        const block: unknown = event.content_block ?? {};
        if (!isBlock(block)) throw this.malformed(data);
        if (block.type === 'text' && block.text) return this.chunk({ content: block.text });
        if (block.type !== 'tool_use') return null;
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
        const delta: unknown = event.delta ?? {};
        if (!isObject(delta)) throw this.malformed(data);
        if (delta.type === 'text_delta') {
          if (!isString(delta.text)) throw this.malformed(data);
          return this.chunk({ content: delta.text });
        }
        if (delta.type !== 'input_json_delta') return null; // thinking and signature deltas stay upstream
        if (!isString(delta.partial_json)) throw this.malformed(data);
        const index = this.tools.get(event.index);
        if (index === undefined) return null;
        if (index === -1) return this.chunk({ content: delta.partial_json });
        return this.chunk({ tool_calls: [{ index, function: { arguments: delta.partial_json } }] });
      }
      case 'message_delta': {
        Object.assign(this.usage, stripNulls(isObject(event.usage) ? event.usage : undefined));
        const stop = isObject(event.delta) ? event.delta.stop_reason : undefined;
        const reason = finishReason(stop == null ? null : String(stop), this.jsonTool);
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

  private chunk(
    delta: UpstreamChunk['choices'][number]['delta'],
    reason: FinishReason | null = null,
  ): UpstreamChunk {
    return {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: reason }],
    };
  }
}

/** The fields of Anthropic's stream events read here; each is checked where it is read (a foreign format). */
interface StreamEvent {
  type?: string;
  index?: number;
  message?: { id?: string; model?: string; usage?: unknown };
  content_block?: unknown;
  delta?: unknown;
  usage?: unknown;
}

function stripNulls(value: Record<string, unknown> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value ?? {})) if (v != null) out[key] = v;
  return out;
}
