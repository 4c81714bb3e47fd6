/** What tollgate answers on `POST /v1/responses`, in OpenAI's Responses format (the fields a client reads). */
import type { StreamEvent } from '../../wire/index.js';

export interface OutputText {
  type: 'output_text';
  text: string;
  annotations: unknown[];
}

export interface MessageOutput {
  type: 'message';
  id: string;
  status: 'in_progress' | 'completed' | 'incomplete';
  role: 'assistant';
  content: OutputText[];
}

export interface FunctionCallOutput {
  type: 'function_call';
  id: string;
  call_id: string;
  name: string;
  namespace?: string;
  arguments: string;
  status: 'in_progress' | 'completed' | 'incomplete';
}

/** A call of a custom (free-text) tool: its `input` is the text itself. */
export interface CustomToolCallOutput {
  type: 'custom_tool_call';
  id: string;
  call_id: string;
  name: string;
  namespace?: string;
  input: string;
  status: 'in_progress' | 'completed' | 'incomplete';
}

export type OutputItem = MessageOutput | FunctionCallOutput | CustomToolCallOutput;

export interface ResponseUsage {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
  /** The amount debited for this request (USD); 0 for test keys. */
  cost: number;
}

export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed';

export interface ResponseObject {
  id: string;
  object: 'response';
  created_at: number;
  status: ResponseStatus;
  error: { code: string; message: string } | null;
  incomplete_details: { reason: string } | null;
  model: string;
  output: OutputItem[];
  usage: ResponseUsage | null;
  [field: string]: unknown;
}

/** One typed stream event; `sequence_number` counts the stream's events from 0. */
export interface ResponseEvent {
  type: string;
  sequence_number: number;
  [field: string]: unknown;
}

/** A stream event as it goes on the wire: named by its type, which its data repeats. */
export function sseOf(event: Record<string, unknown>): StreamEvent {
  return { event: String(event.type), data: event };
}

/** The events that end a stream whose answer is complete (stored for idempotent replay). */
export const FINAL_EVENTS: ReadonlySet<string> = new Set(['response.completed', 'response.incomplete']);
