/**
 * Anthropic's Messages API answers (https://docs.anthropic.com/en/api/messages): the Message, its stream events,
 * the count_tokens answer and the error envelope, as tollgate sends them on `POST /v1/messages` (components of the
 * OpenAPI document, with an `$id`). A Message from Anthropic itself is passed through, so the objects are open
 * (Anthropic's other fields and block types pass). `Upstream*` are the lenient shapes the Anthropic adapter checks
 * Anthropic's JSON against before it reads it: only what it reads is required.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Nullable, Open, OptionalNullable, Usd } from './schema-kit.js';

export const AnthropicStopReasonSchema = Type.Union([
  Type.Literal('end_turn'),
  Type.Literal('max_tokens'),
  Type.Literal('stop_sequence'),
  Type.Literal('tool_use'),
  Type.Literal('refusal'),
  Type.Literal('pause_turn'),
  Type.Literal('model_context_window_exceeded'),
]);

const Count = Type.Integer({ minimum: 0 });

export const AnthropicUsageSchema = Open({
  input_tokens: Count,
  output_tokens: Count,
  cache_creation_input_tokens: OptionalNullable(Count),
  cache_read_input_tokens: OptionalNullable(Count),
});

export const AnthropicTextBlockSchema = Open({ type: Type.Literal('text'), text: Type.String() });

export const AnthropicToolUseBlockSchema = Open({
  type: Type.Literal('tool_use'),
  id: Type.String(),
  name: Type.String(),
  input: Type.Unknown({ description: 'The JSON object the tool is called with' }),
});

export const AnthropicThinkingBlockSchema = Open({
  type: Type.Literal('thinking'),
  thinking: Type.String(),
  signature: Type.String(),
});

const KNOWN_BLOCK_TYPES = ['text', 'tool_use', 'thinking'];
const otherType = (known: string[], description: string) =>
  Open({ type: Type.String({ minLength: 1, pattern: `^(?!(${known.join('|')})$)` }) }, { description });

/** The blocks an answer holds; other types (redacted_thinking, server_tool_use, ...) come from Anthropic itself. */
export const AnthropicOutputBlockSchema = Type.Union([
  AnthropicTextBlockSchema,
  AnthropicToolUseBlockSchema,
  AnthropicThinkingBlockSchema,
  otherType(KNOWN_BLOCK_TYPES, "Anthropic's other block types (redacted_thinking, server_tool_use, ...)"),
]);

const messageFields = {
  id: Type.String(),
  type: Type.Literal('message'),
  role: Type.Literal('assistant'),
  model: Type.String({ description: "The catalog's model id" }),
  content: Type.Array(AnthropicOutputBlockSchema),
  stop_reason: Nullable(AnthropicStopReasonSchema),
  stop_sequence: Nullable(Type.String()),
  usage: AnthropicUsageSchema,
};

/** The Message `POST /v1/messages` answers; the cost is in the `x-tollgate-cost` header. */
export const AnthropicMessageSchema = Open(messageFields, { $id: 'AnthropicMessage' });

/** Anthropic's error types and the HTTP status each stands for (its SDK maps them to its own error classes). */
export const ANTHROPIC_ERROR_STATUS: Readonly<Record<string, number>> = {
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

export const AnthropicErrorSchema = Open(
  {
    type: Type.Literal('error'),
    error: Open({
      type: Type.String({ description: 'invalid_request_error, authentication_error, billing_error, ...' }),
      message: Type.String(),
    }),
  },
  { $id: 'AnthropicError', description: "Anthropic's error envelope" },
);

/** `POST /v1/messages/count_tokens`: the prompt's input tokens by tollgate's count. */
export const AnthropicTokenCountSchema = Type.Object(
  { input_tokens: Type.Integer({ minimum: 0 }) },
  { $id: 'AnthropicTokenCount' },
);

const index = Type.Integer({ minimum: 0 });

export const AnthropicContentDeltaSchema = Type.Union([
  Open({ type: Type.Literal('text_delta'), text: Type.String() }),
  Open({ type: Type.Literal('input_json_delta'), partial_json: Type.String() }),
  Open({ type: Type.Literal('thinking_delta'), thinking: Type.String() }),
  Open({ type: Type.Literal('signature_delta'), signature: Type.String() }),
  otherType(['text_delta', 'input_json_delta', 'thinking_delta', 'signature_delta'], "Anthropic's other deltas"),
]);

/** A block as its stream opens it: a thinking block's signature comes later, in a signature_delta. */
const StreamBlockSchema = Type.Union([
  AnthropicTextBlockSchema,
  AnthropicToolUseBlockSchema,
  Open({ type: Type.Literal('thinking'), thinking: Type.String(), signature: Type.Optional(Type.String()) }),
  otherType(KNOWN_BLOCK_TYPES, "Anthropic's other block types (redacted_thinking, server_tool_use, ...)"),
]);

/** The stream's events; `message_delta`'s usage adds `cost` (USD) on tollgate's closing event. */
export const AnthropicStreamEventSchema = Type.Union(
  [
    Open({
      type: Type.Literal('message_start'),
      message: Open({
        ...messageFields,
        content: Type.Array(AnthropicOutputBlockSchema, { description: 'empty: the blocks follow' }),
      }),
    }),
    Open({ type: Type.Literal('content_block_start'), index, content_block: StreamBlockSchema }),
    Open({ type: Type.Literal('content_block_delta'), index, delta: AnthropicContentDeltaSchema }),
    Open({ type: Type.Literal('content_block_stop'), index }),
    Open({
      type: Type.Literal('message_delta'),
      delta: Open({ stop_reason: Nullable(AnthropicStopReasonSchema), stop_sequence: OptionalNullable(Type.String()) }),
      usage: Open({
        input_tokens: Type.Optional(Nullable(Count)),
        output_tokens: Count,
        cache_creation_input_tokens: OptionalNullable(Count),
        cache_read_input_tokens: OptionalNullable(Count),
        cost: Type.Optional(Usd('The amount debited for this request; 0 for test keys')),
      }),
    }),
    Open({ type: Type.Literal('message_stop') }),
    Open({ type: Type.Literal('ping') }),
    AnthropicErrorSchema,
  ],
  {
    $id: 'AnthropicStreamEvent',
    description: 'One event of a streamed Message: `event: <type>` then `data: <this JSON>`',
  },
);

/**
 * A content block as the adapter reads it: text with a string text (or none), tool_use with its id and name;
 * other types are skipped.
 */
export const UpstreamAnthropicBlockSchema = Type.Union([
  Open({ type: Type.Literal('text'), text: Type.Optional(Type.String()) }),
  Open({
    type: Type.Literal('tool_use'),
    id: Type.String(),
    name: Type.String(),
    input: Type.Optional(Type.Unknown()),
  }),
  Open({ type: Type.String({ pattern: '^(?!(text|tool_use)$)' }) }),
]);

/**
 * A Message as the adapter reads it: its content blocks. Usage is read where it is used (a message without
 * readable usage is counted by the gateway); the other fields pass through.
 */
export const UpstreamAnthropicMessageSchema = Open({
  type: Type.Literal('message'),
  id: Type.Optional(Type.String()),
  model: Type.Optional(Type.String()),
  content: Type.Array(UpstreamAnthropicBlockSchema),
  stop_reason: OptionalNullable(Type.String()),
  usage: Type.Optional(Type.Unknown()),
});

/** The stream events the adapter reads, by type (`type` may be left to the SSE event's name); others pass. */
export const UpstreamAnthropicEventSchemas = {
  message_start: Open({
    message: Open({
      id: Type.Optional(Type.String()),
      model: Type.Optional(Type.String()),
      usage: Type.Optional(Type.Unknown()),
    }),
  }),
  content_block_start: Open({ index: Type.Optional(index), content_block: UpstreamAnthropicBlockSchema }),
  content_block_delta: Open({
    index: Type.Optional(index),
    delta: Type.Union([
      Open({ type: Type.Literal('text_delta'), text: Type.String() }),
      Open({ type: Type.Literal('input_json_delta'), partial_json: Type.String() }),
      Open({ type: Type.String({ pattern: '^(?!(text_delta|input_json_delta)$)' }) }),
    ]),
  }),
  message_delta: Open({
    delta: Type.Optional(Open({ stop_reason: OptionalNullable(Type.String()) })),
    usage: Type.Optional(Type.Unknown()),
  }),
};

export type AnthropicStopReason = Static<typeof AnthropicStopReasonSchema>;
export type AnthropicUsage = Static<typeof AnthropicUsageSchema>;
export type AnthropicOutputBlock = Static<typeof AnthropicOutputBlockSchema>;
export type AnthropicTextBlock = Static<typeof AnthropicTextBlockSchema>;
export type AnthropicToolUseBlock = Static<typeof AnthropicToolUseBlockSchema>;
export type AnthropicMessage = Static<typeof AnthropicMessageSchema>;
export type AnthropicErrorBody = Static<typeof AnthropicErrorSchema>;
export type AnthropicTokenCount = Static<typeof AnthropicTokenCountSchema>;
export type AnthropicStreamEvent = Static<typeof AnthropicStreamEventSchema>;
export type UpstreamAnthropicBlock = Static<typeof UpstreamAnthropicBlockSchema>;
export type UpstreamAnthropicMessage = Static<typeof UpstreamAnthropicMessageSchema>;
