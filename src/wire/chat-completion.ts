/**
 * Answers in OpenAI's chat-completions format. Each comes twice, from the same fields:
 * - sent by the gateway to clients (`ChatCompletion`, `ChatCompletionChunk`, `Usage` with the request's `cost`):
 *   these have an `$id` and are components of the OpenAPI document;
 * - returned by a provider adapter (`Upstream*`): before metering, so `usage` may be missing and has no `cost`,
 *   and unknown fields pass through.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Nullable, Open, OptionalNullable, UnixSeconds, Usd } from './schema-kit.js';
import { toolCallSchema } from './chat-request.js';

const tokenCounts = {
  prompt_tokens: Type.Integer({ minimum: 0 }),
  completion_tokens: Type.Integer({ minimum: 0 }),
  total_tokens: Type.Integer({ minimum: 0 }),
};

const Count = Type.Integer({ minimum: 0 });
/** The provider's own breakdown, as it reported it: each kind is billed at its own catalog price. */
const breakdown = {
  prompt_tokens_details: Type.Optional(
    Open({
      cached_tokens: Type.Optional(Type.Integer({ minimum: 0, description: 'Prompt tokens read from a cache' })),
    }),
  ),
  completion_tokens_details: Type.Optional(
    Open({ reasoning_tokens: Type.Optional(Type.Integer({ minimum: 0, description: 'Reasoning tokens' })) }),
  ),
  cache_creation_input_tokens: Type.Optional(
    Type.Integer({ minimum: 0, description: "Prompt tokens written to a cache (Anthropic's models)" }),
  ),
  cache_read_input_tokens: Type.Optional(
    Type.Integer({ minimum: 0, description: "Prompt tokens read from a cache (Anthropic's models)" }),
  ),
  cache_creation: Type.Optional(
    Open({ ephemeral_5m_input_tokens: Type.Optional(Count), ephemeral_1h_input_tokens: Type.Optional(Count) }),
  ),
  server_tool_use: Type.Optional(Open({ web_search_requests: Type.Optional(Count) })),
};

export const UsageSchema = Type.Object(
  { ...tokenCounts, ...breakdown, cost: Usd('The amount debited for this request; 0 for test keys') },
  { $id: 'Usage' },
);
export const UpstreamUsageSchema = Open(tokenCounts);

export const FinishReasonSchema = Type.Union([
  Type.Literal('stop'),
  Type.Literal('length'),
  Type.Literal('tool_calls'),
  Type.Literal('content_filter'),
  Type.Literal('function_call'),
]);

const ToolCall = toolCallSchema({ description: 'JSON text' });

const head = {
  id: Type.String(),
  created: UnixSeconds,
  system_fingerprint: Type.Optional(Nullable(Type.String())),
};

const message = {
  role: Type.Literal('assistant'),
  content: Nullable(Type.String()),
  refusal: Type.Optional(Nullable(Type.String())),
  tool_calls: Type.Optional(Type.Array(ToolCall)),
};

const choiceEnd = {
  logprobs: Type.Optional(Type.Unknown()),
  finish_reason: Nullable(FinishReasonSchema),
};

export const ChatCompletionSchema = Type.Object(
  {
    id: head.id,
    object: Type.Literal('chat.completion'),
    created: head.created,
    model: Type.String({ description: 'The catalog id of the model that answered' }),
    system_fingerprint: head.system_fingerprint,
    choices: Type.Array(
      Type.Object({ index: Type.Integer({ minimum: 0 }), message: Type.Object(message), ...choiceEnd }),
    ),
    usage: UsageSchema,
  },
  { $id: 'ChatCompletion' },
);

export const UpstreamCompletionSchema = Open({
  ...head,
  object: Type.Literal('chat.completion'),
  model: Type.String(),
  choices: Type.Array(Type.Object({ index: Type.Integer({ minimum: 0 }), message: Open(message), ...choiceEnd })),
  usage: Type.Optional(UpstreamUsageSchema),
});

export const ToolCallDeltaSchema = Type.Object({
  index: Type.Integer({ minimum: 0 }),
  id: Type.Optional(Type.String()),
  type: Type.Optional(Type.Literal('function')),
  function: Type.Optional(Type.Object({ name: Type.Optional(Type.String()), arguments: Type.Optional(Type.String()) })),
});

const delta = {
  role: Type.Optional(Type.Literal('assistant')),
  content: Type.Optional(Nullable(Type.String())),
  tool_calls: Type.Optional(Type.Array(ToolCallDeltaSchema)),
};

export const ChatCompletionChunkSchema = Type.Object(
  {
    id: head.id,
    object: Type.Literal('chat.completion.chunk'),
    created: head.created,
    model: Type.String(),
    system_fingerprint: head.system_fingerprint,
    choices: Type.Array(Type.Object({ index: Type.Integer({ minimum: 0 }), delta: Type.Object(delta), ...choiceEnd })),
    usage: Type.Optional(Nullable(UsageSchema)),
  },
  {
    $id: 'ChatCompletionChunk',
    description: 'One `data:` event of a streamed answer; the stream ends with `data: [DONE]`',
  },
);

export const UpstreamChunkSchema = Open({
  ...head,
  object: Type.Literal('chat.completion.chunk'),
  model: Type.String(),
  choices: Type.Array(Type.Object({ index: Type.Integer({ minimum: 0 }), delta: Open(delta), ...choiceEnd })),
  usage: Type.Optional(Nullable(UpstreamUsageSchema)),
});

export type Usage = Static<typeof UsageSchema>;
export type ChatCompletion = Static<typeof ChatCompletionSchema>;
export type ChatCompletionChunk = Static<typeof ChatCompletionChunkSchema>;
export type FinishReason = Static<typeof FinishReasonSchema>;
export type ToolCallDelta = Static<typeof ToolCallDeltaSchema>;
export type UpstreamUsage = Static<typeof UpstreamUsageSchema>;
export type UpstreamCompletion = Static<typeof UpstreamCompletionSchema>;
export type UpstreamChunk = Static<typeof UpstreamChunkSchema>;

/**
 * What an OpenAI-compatible adapter checks of an upstream answer before it relays it: the choices the gateway
 * reads (a message, and tool calls that are function calls). The rest of UpstreamCompletion is not checked:
 * servers vary in what they send of it, and it passes through.
 */
export const ReadableUpstreamCompletionSchema = Open({
  choices: Type.Array(
    Open({ message: Open({ tool_calls: OptionalNullable(Type.Array(Open({ function: Open({}) }))) }) }),
  ),
});

/** What an OpenAI-compatible adapter checks of a stream chunk: its choices are deltas, their tool calls objects. */
export const ReadableUpstreamChunkSchema = Open({
  choices: Type.Array(Open({ delta: Open({ tool_calls: OptionalNullable(Type.Array(Open({}))) }) })),
});
