/**
 * Chat answers in Anthropic's terms: a completion as a Message, and a chat stream's chunks as the Messages
 * stream's events (message_start, ping, content_block_start/delta/stop, message_delta with usage, message_stop).
 */
import type {
  AnthropicMessage,
  AnthropicOutputBlock,
  AnthropicStopReason,
  FinishReason,
  StreamEvent,
  UpstreamChunk,
  UpstreamCompletion,
} from '../../wire/index.js';
import { chatUsage, completionTokensOf } from '../../pricing/index.js';

export type { AnthropicMessage };
export type StopReason = AnthropicStopReason;

const STOP: Record<FinishReason, StopReason> = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  function_call: 'tool_use',
  content_filter: 'refusal',
};

export function stopReasonOf(reason: FinishReason | null | undefined): StopReason | null {
  return reason ? (STOP[reason] ?? 'end_turn') : null;
}

/** Tool arguments as Anthropic's `input` object ({} when the model's JSON is broken, as Anthropic never sends). */
function inputOf(args: string): unknown {
  try {
    const input: unknown = JSON.parse(args || '{}');
    return typeof input === 'object' && input !== null ? input : {};
  } catch {
    return {};
  }
}

/** A settled completion as a Message; `usage` is what was billed. */
export function messageFromCompletion(id: string, completion: UpstreamCompletion): AnthropicMessage {
  const choice = completion.choices[0];
  const content: AnthropicOutputBlock[] = [];
  const text = choice?.message.content;
  if (typeof text === 'string' && text) content.push({ type: 'text', text });
  for (const call of choice?.message.tool_calls ?? [])
    content.push({ type: 'tool_use', id: call.id, name: call.function.name, input: inputOf(call.function.arguments) });
  return {
    id,
    type: 'message',
    role: 'assistant',
    model: completion.model,
    content,
    stop_reason: stopReasonOf(choice?.finish_reason),
    stop_sequence: null,
    usage: messagesUsage(completion.usage),
  };
}

/**
 * Chat usage in Anthropic's shape: `input_tokens` without the cache reads and writes, which are told apart as
 * Anthropic tells them.
 */
export function messagesUsage(usage: { prompt_tokens?: number; completion_tokens?: number } | null | undefined) {
  // Read as the charge reads it: the same kinds told apart.
  const kinds = chatUsage(usage, { prompt: 0, completion: () => 0 });
  const written = kinds.cacheWrite + kinds.cacheWrite1h;
  return {
    input_tokens: kinds.input,
    output_tokens: completionTokensOf(kinds),
    ...(kinds.cacheRead ? { cache_read_input_tokens: kinds.cacheRead } : {}),
    ...(written ? { cache_creation_input_tokens: written } : {}),
  };
}

/** One Messages stream event: named by its type, which its data repeats. */
export function messagesEvent(type: string, data: Record<string, unknown>): StreamEvent {
  return { event: type, data: { type, ...data } };
}

/**
 * Turns a chat stream into Messages events, chunk by chunk. The chunk with usage (the gateway's closing chunk,
 * after the charge is durable) becomes message_delta and message_stop; its `cost` (USD) rides on message_delta's
 * usage, the one place a Messages stream has for it.
 */
export class MessagesStreamWriter {
  private started = false;
  private stopped = false;
  private open: { index: number; kind: 'text' | 'tool' } | undefined;
  private blocks = 0;
  /** Chat's tool_calls index -> content block index. */
  private readonly tools = new Map<number, number>();
  private stopReason: StopReason | null = null;

  constructor(
    private readonly id: string,
    private readonly model: string,
    private readonly inputTokens: number,
  ) {}

  /** The events one chat chunk stands for. */
  write(chunk: UpstreamChunk): StreamEvent[] {
    const events = this.start();
    for (const choice of chunk.choices) {
      const { delta } = choice;
      if (typeof delta.content === 'string' && delta.content) {
        if (this.open?.kind !== 'text') events.push(...this.openBlock('text', { type: 'text', text: '' }));
        events.push(this.delta({ type: 'text_delta', text: delta.content }));
      }
      for (const call of delta.tool_calls ?? []) {
        let index = this.tools.get(call.index);
        if (index === undefined) {
          const block = {
            type: 'tool_use',
            id: call.id ?? `toolu_${this.id}_${call.index}`,
            name: call.function?.name ?? '',
            input: {},
          };
          events.push(...this.openBlock('tool', block));
          index = this.open!.index;
          this.tools.set(call.index, index);
        }
        const partial = call.function?.arguments;
        if (partial)
          events.push(
            messagesEvent('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: partial } }),
          );
      }
      if (choice.finish_reason) {
        this.stopReason = stopReasonOf(choice.finish_reason);
        events.push(...this.closeBlock());
      }
    }
    if (chunk.usage) events.push(...this.end(chunk.usage));
    return events;
  }

  /** The closing events, once: message_delta with the billed usage (and cost when known), then message_stop. */
  end(usage?: { prompt_tokens?: number; completion_tokens?: number; cost?: number }): StreamEvent[] {
    if (this.stopped) return [];
    this.stopped = true;
    const events = [...this.start(), ...this.closeBlock()];
    events.push(
      messagesEvent('message_delta', {
        delta: { stop_reason: this.stopReason ?? 'end_turn', stop_sequence: null },
        usage: {
          ...messagesUsage({ prompt_tokens: this.inputTokens, ...usage }),
          ...(usage?.cost !== undefined ? { cost: usage.cost } : {}),
        },
      }),
      messagesEvent('message_stop', {}),
    );
    return events;
  }

  private start(): StreamEvent[] {
    if (this.started) return [];
    this.started = true;
    const message = {
      id: this.id,
      type: 'message',
      role: 'assistant',
      model: this.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: this.inputTokens, output_tokens: 0 },
    };
    return [messagesEvent('message_start', { message }), messagesEvent('ping', {})];
  }

  private openBlock(kind: 'text' | 'tool', block: Record<string, unknown>): StreamEvent[] {
    const events = this.closeBlock();
    const index = this.blocks++;
    this.open = { index, kind };
    events.push(messagesEvent('content_block_start', { index, content_block: block }));
    return events;
  }

  private closeBlock(): StreamEvent[] {
    if (!this.open) return [];
    const { index } = this.open;
    this.open = undefined;
    return [messagesEvent('content_block_stop', { index })];
  }

  private delta(delta: Record<string, unknown>): StreamEvent {
    return messagesEvent('content_block_delta', { index: this.open!.index, delta });
  }
}
