/**
 * Chat stream chunks as the Responses API's typed events, in OpenAI's order: `response.created` and
 * `response.in_progress`; per output item `output_item.added`, its content parts (`content_part.added`, the text's
 * `output_text.delta`..., `output_text.done` or a refusal's `refusal.delta`..., `refusal.done`,
 * `content_part.done`) or its arguments (`function_call_arguments.delta`..., `.done`), `output_item.done`; then
 * `response.completed` with usage (or `response.incomplete`). Each event carries its `sequence_number`. A custom
 * tool's call is told once its chat arguments are whole (its free text is inside their JSON):
 * `custom_tool_call_input.delta` with all of it, `.done`.
 */
import type { UpstreamChunk, UpstreamUsage } from '../../providers/index.js';
import {
  callItem,
  finished,
  messageItem,
  refusalPart,
  responseShell,
  textPart,
  type ResponseMeta,
} from './from-chat.js';
import type { ResponseRequest } from './schema.js';
import { chatTools, customInput, type ChatTools } from './tools.js';
import type {
  CustomToolCallOutput,
  FunctionCallOutput,
  MessageOutput,
  OutputItem,
  OutputText,
  Refusal,
  ResponseEvent,
  ResponseObject,
} from './types.js';

type FinishReason = UpstreamChunk['choices'][number]['finish_reason'];

/** The message being written, and its part being written (the last of its content). */
interface OpenMessage {
  item: MessageOutput;
  part: OutputText | Refusal;
}

export class ChatStreamTranslator {
  private readonly shell: ResponseObject;
  private readonly output: OutputItem[] = [];
  private sequence = 0;
  /** The item being written: the message, or the call of a chat tool-call index (with its chat arguments so far). */
  private open:
    OpenMessage | { item: FunctionCallOutput | CustomToolCallOutput; index: number; args: string } | undefined;
  private readonly tools: ChatTools;
  private finishReason: FinishReason | undefined;

  constructor(
    request: ResponseRequest,
    private readonly meta: ResponseMeta,
  ) {
    this.shell = responseShell(request, meta);
    this.tools = chatTools(request);
  }

  /** The Response's id. */
  get id(): string {
    return this.meta.id;
  }

  start(): ResponseEvent[] {
    return [
      this.event('response.created', { response: this.shell }),
      this.event('response.in_progress', { response: this.shell }),
    ];
  }

  chunk(chunk: UpstreamChunk): ResponseEvent[] {
    const events: ResponseEvent[] = [];
    const choice = chunk.choices[0];
    if (!choice) return events;
    const { content, refusal, tool_calls: calls } = choice.delta;
    if (typeof content === 'string' && content) this.write(events, 'output_text', content);
    if (typeof refusal === 'string' && refusal) this.write(events, 'refusal', refusal);
    for (const call of calls ?? []) {
      let open = this.open;
      if (!open || !('index' in open) || open.index !== call.index) {
        this.close(events);
        const id = this.meta.newId('fc');
        const item = callItem(this.tools, id, call.id ?? id, call.function?.name ?? '', '', 'in_progress');
        open = { item, index: call.index, args: '' };
        this.open = open;
        this.output.push(item);
        events.push(
          this.event('response.output_item.added', { output_index: this.output.length - 1, item: { ...item } }),
        );
      }
      const delta = call.function?.arguments;
      if (!delta || !('args' in open)) continue;
      open.args += delta;
      if (open.item.type === 'function_call') {
        open.item.arguments += delta;
        events.push(this.event('response.function_call_arguments.delta', { ...this.place(open.item), delta }));
      }
    }
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
    return events;
  }

  /** The end of the answer, with its billed usage: the open item closed, then the Response complete. */
  end(usage: UpstreamUsage | null | undefined): ResponseEvent[] {
    const events: ResponseEvent[] = [];
    this.close(events);
    const response = finished(this.shell, this.output, this.finishReason, usage);
    events.push(this.event(`response.${response.status}`, { response }));
    return events;
  }

  /**
   * A failure after the stream began: `response.failed` with the output so far (the item being written left
   * incomplete) and the error in OpenAI's terms: its `code` one OpenAI defines, the message the client would
   * otherwise have got.
   */
  fail(error: { code: string; message: string }): ResponseEvent[] {
    if (this.open) this.open.item.status = 'incomplete';
    this.open = undefined;
    const code = error.code === 'rate_limit_exceeded' ? 'rate_limit_exceeded' : 'server_error';
    const response = {
      ...this.shell,
      status: 'failed',
      error: { code, message: error.message },
      output: structuredClone(this.output),
    };
    return [this.event('response.failed', { response })];
  }

  /** A piece of the message's text or refusal: in the message's part of that kind, opened if it is not. */
  private write(events: ResponseEvent[], kind: 'output_text' | 'refusal', delta: string): void {
    let open = this.open && 'part' in this.open ? this.open : this.openMessage(events, kind);
    if (open.part.type !== kind) {
      this.closePart(events, open);
      open = this.openPart(events, open.item, kind);
    }
    const place = { ...this.place(open.item), content_index: open.item.content.length - 1, delta };
    if (open.part.type === 'output_text') {
      open.part.text += delta;
      events.push(this.event('response.output_text.delta', { ...place, logprobs: [] }));
    } else {
      open.part.refusal += delta;
      events.push(this.event('response.refusal.delta', place));
    }
  }

  private openMessage(events: ResponseEvent[], kind: 'output_text' | 'refusal'): OpenMessage {
    this.close(events);
    const item = messageItem(this.meta.newId('msg'), [], 'in_progress');
    this.output.push(item);
    events.push(
      this.event('response.output_item.added', { output_index: this.output.length - 1, item: structuredClone(item) }),
    );
    return this.openPart(events, item, kind);
  }

  private openPart(events: ResponseEvent[], item: MessageOutput, kind: 'output_text' | 'refusal'): OpenMessage {
    const part = kind === 'output_text' ? textPart('') : refusalPart('');
    item.content.push(part);
    const open = { item, part };
    this.open = open;
    const place = { ...this.place(item), content_index: item.content.length - 1 };
    events.push(this.event('response.content_part.added', { ...place, part: { ...part } }));
    return open;
  }

  private closePart(events: ResponseEvent[], { item, part }: OpenMessage): void {
    const place = { ...this.place(item), content_index: item.content.indexOf(part) };
    if (part.type === 'output_text')
      events.push(this.event('response.output_text.done', { ...place, text: part.text, logprobs: [] }));
    else events.push(this.event('response.refusal.done', { ...place, refusal: part.refusal }));
    events.push(this.event('response.content_part.done', { ...place, part: structuredClone(part) }));
  }

  private close(events: ResponseEvent[]): void {
    const open = this.open;
    if (!open) return;
    this.open = undefined;
    const { item } = open;
    item.status = 'completed';
    if ('part' in open) {
      this.closePart(events, open);
    } else if (item.type === 'function_call') {
      events.push(
        this.event('response.function_call_arguments.done', {
          ...this.place(item),
          name: item.name,
          arguments: item.arguments,
        }),
      );
    } else if (item.type === 'custom_tool_call') {
      item.input = customInput(open.args);
      if (item.input)
        events.push(this.event('response.custom_tool_call_input.delta', { ...this.place(item), delta: item.input }));
      events.push(this.event('response.custom_tool_call_input.done', { ...this.place(item), input: item.input }));
    }
    events.push(
      this.event('response.output_item.done', { output_index: this.output.indexOf(item), item: structuredClone(item) }),
    );
  }

  private place(item: OutputItem): { item_id: string; output_index: number } {
    return { item_id: item.id, output_index: this.output.indexOf(item) };
  }

  private event(type: string, fields: Record<string, unknown>): ResponseEvent {
    return { type, sequence_number: this.sequence++, ...fields };
  }
}
