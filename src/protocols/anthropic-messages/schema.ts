/**
 * Anthropic's Messages request (https://docs.anthropic.com/en/api/messages) as a TypeBox schema: what
 * POST /v1/messages validates and the OpenAPI document shows. The blocks tollgate reads are checked; others
 * (server tools' blocks, fields Anthropic adds) pass through, since the native path forwards them unchanged.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Open } from '../../wire/index.js';

const CacheControl = Type.Optional(Open({ type: Type.String() }));

export const TextBlockSchema = Open({ type: Type.Literal('text'), text: Type.String(), cache_control: CacheControl });

export const ImageBlockSchema = Open({
  type: Type.Literal('image'),
  source: Type.Union([
    Open({ type: Type.Literal('base64'), media_type: Type.String(), data: Type.String() }),
    Open({ type: Type.Literal('url'), url: Type.String({ minLength: 1 }) }),
    Open({ type: Type.String({ pattern: '^(?!(base64|url)$)' }) }),
  ]),
  cache_control: CacheControl,
});

export const DocumentBlockSchema = Open({
  type: Type.Literal('document'),
  source: Open({ type: Type.String() }),
  title: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  cache_control: CacheControl,
});

export const ToolUseBlockSchema = Open({
  type: Type.Literal('tool_use'),
  id: Type.String({ minLength: 1 }),
  name: Type.String({ minLength: 1 }),
  input: Type.Unknown(),
  cache_control: CacheControl,
});

export const ToolResultBlockSchema = Open({
  type: Type.Literal('tool_result'),
  tool_use_id: Type.String({ minLength: 1 }),
  content: Type.Optional(Type.Union([Type.String(), Type.Array(Open({ type: Type.String() }))])),
  is_error: Type.Optional(Type.Boolean()),
  cache_control: CacheControl,
});

export const ThinkingBlockSchema = Open({
  type: Type.Literal('thinking'),
  thinking: Type.String(),
  signature: Type.String(),
});

export const RedactedThinkingBlockSchema = Open({ type: Type.Literal('redacted_thinking'), data: Type.String() });

export const ContentBlockSchema = Type.Union([
  TextBlockSchema,
  ImageBlockSchema,
  DocumentBlockSchema,
  ToolUseBlockSchema,
  ToolResultBlockSchema,
  ThinkingBlockSchema,
  RedactedThinkingBlockSchema,
  // Other block types (server_tool_use, search_result, ...) pass through; a known type must have its fields.
  Open({
    type: Type.String({
      minLength: 1,
      pattern: '^(?!(text|image|document|tool_use|tool_result|thinking|redacted_thinking)$)',
    }),
  }),
]);

export const MessageParamSchema = Open({
  // `system` mid-conversation: Anthropic's beta `mid-conversation-system-2026-04-07`, which Claude Code uses.
  role: Type.Union([Type.Literal('user'), Type.Literal('assistant'), Type.Literal('system')]),
  content: Type.Union([Type.String(), Type.Array(ContentBlockSchema)]),
});

export const ToolParamSchema = Open({
  name: Type.String({ minLength: 1 }),
  description: Type.Optional(Type.String()),
  // Custom tools have it; Anthropic's server tools (`type: web_search_20250305`, ...) do not.
  input_schema: Type.Optional(Open({})),
  type: Type.Optional(Type.String()),
  cache_control: CacheControl,
});

export const ToolChoiceParamSchema = Open({
  type: Type.Union([Type.Literal('auto'), Type.Literal('any'), Type.Literal('tool'), Type.Literal('none')]),
  name: Type.Optional(Type.String()),
  disable_parallel_tool_use: Type.Optional(Type.Boolean()),
});

const messagesFields = {
  model: Type.String({ minLength: 1 }),
  messages: Type.Array(MessageParamSchema, { minItems: 1 }),
  system: Type.Optional(Type.Union([Type.String(), Type.Array(TextBlockSchema)])),
  tools: Type.Optional(Type.Array(ToolParamSchema)),
  tool_choice: Type.Optional(ToolChoiceParamSchema),
  thinking: Type.Optional(
    Open({
      type: Type.String({ minLength: 1 }),
      budget_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
    }),
  ),
  metadata: Type.Optional(Open({ user_id: Type.Optional(Type.Union([Type.String(), Type.Null()])) })),
};

export const MessagesRequestSchema = Open({
  ...messagesFields,
  max_tokens: Type.Integer({ minimum: 1 }),
  stop_sequences: Type.Optional(Type.Array(Type.String())),
  temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  top_p: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  top_k: Type.Optional(Type.Integer({ minimum: 0 })),
  stream: Type.Optional(Type.Boolean()),
});

/** POST /v1/messages/count_tokens: the prompt part of a Messages request. */
export const CountTokensRequestSchema = Open(messagesFields);

export type MessagesRequest = Static<typeof MessagesRequestSchema>;
export type CountTokensRequest = Static<typeof CountTokensRequestSchema>;
export type MessageParam = Static<typeof MessageParamSchema>;
export type ContentBlock = Static<typeof ContentBlockSchema>;
export type ToolParam = Static<typeof ToolParamSchema>;
export type ToolChoiceParam = Static<typeof ToolChoiceParamSchema>;

// The answers (Message, stream events, token count, error envelope) are the wire contract's, shared with the
// Anthropic adapter.
export {
  AnthropicErrorSchema,
  AnthropicMessageSchema,
  AnthropicStreamEventSchema,
  AnthropicTokenCountSchema,
} from '../../wire/index.js';
