/**
 * What tollgate answers on `POST /v1/responses`, in OpenAI's Responses format: the wire contract's schemas
 * (src/wire/responses.ts), named as the translation from chat uses them.
 */
import type {
  ResponseCustomToolCallOutput,
  ResponseEventEnvelope,
  ResponseFromChat,
  ResponseFunctionCallOutput,
  ResponseMessageOutput,
  ResponseOutputText,
  ResponseOwnOutputItem,
  ResponseRefusal,
  ResponseStatus,
  ResponseUsage,
  StreamEvent,
} from '../../wire/index.js';

export type OutputText = ResponseOutputText;
export type Refusal = ResponseRefusal;
export type MessageOutput = ResponseMessageOutput;
export type FunctionCallOutput = ResponseFunctionCallOutput;
/** A call of a custom (free-text) tool: its `input` is the text itself. */
export type CustomToolCallOutput = ResponseCustomToolCallOutput;
/** An output item tollgate writes from a chat answer. */
export type OutputItem = ResponseOwnOutputItem;
export type { ResponseStatus, ResponseUsage };
/** A Response tollgate writes from a chat answer (the wire contract's Response with only its own items). */
export type ResponseObject = ResponseFromChat;
/** One typed stream event; `sequence_number` counts the stream's events from 0. */
export type ResponseEvent = ResponseEventEnvelope;

/** A stream event as it goes on the wire: named by its type, which its data repeats. */
export function sseOf(event: Record<string, unknown>): StreamEvent {
  return { event: String(event.type), data: event };
}

/** The events that end a stream whose answer is complete (stored for idempotent replay). */
export const FINAL_EVENTS: ReadonlySet<string> = new Set(['response.completed', 'response.incomplete']);
