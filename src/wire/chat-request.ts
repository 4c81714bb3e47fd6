/**
 * The chat-completions request a client sends (OpenAI's format plus tollgate's `models` and `timeout_ms`).
 * The schema validates requests and is the OpenAPI document's `ChatRequest`; unknown fields pass through to the
 * provider.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Open, OptionalNullable } from './schema-kit.js';

/** A prompt-cache breakpoint (Anthropic's, as hosted gateways take it on chat): the prefix up to here is cached. */
export const CacheControlSchema = Type.Object({
  type: Type.Literal('ephemeral'),
  ttl: Type.Optional(Type.Union([Type.Literal('5m'), Type.Literal('1h')])),
});
const cacheControl = { cache_control: Type.Optional(CacheControlSchema) };

export const TextPartSchema = Type.Object({ type: Type.Literal('text'), text: Type.String(), ...cacheControl });

export const ImagePartSchema = Type.Object({
  type: Type.Literal('image_url'),
  image_url: Type.Object({ url: Type.String({ minLength: 1 }), detail: Type.Optional(Type.String()) }),
  ...cacheControl,
});

export const ContentPartSchema = Type.Union([
  TextPartSchema,
  ImagePartSchema,
  // Other part types (input_audio, file, ...) pass through; a `text` or `image_url` part must have its field.
  Open({ type: Type.String({ minLength: 1, pattern: '^(?!(text|image_url)$)' }) }),
]);

/** A function call the model made. `argumentsOptions` documents `arguments` where the gateway answers with it. */
export const toolCallSchema = (argumentsOptions?: { description: string }) =>
  Type.Object({
    id: Type.String(),
    type: Type.Literal('function'),
    function: Type.Object({ name: Type.String(), arguments: Type.String(argumentsOptions) }),
  });

export const RoleSchema = Type.Union([
  Type.Literal('system'),
  Type.Literal('developer'),
  Type.Literal('user'),
  Type.Literal('assistant'),
  Type.Literal('tool'),
  Type.Literal('function'),
]);

export const ChatMessageSchema = Open({
  role: RoleSchema,
  content: Type.Optional(Type.Union([Type.String(), Type.Array(ContentPartSchema), Type.Null()])),
  name: Type.Optional(Type.String()),
  tool_calls: Type.Optional(Type.Array(toolCallSchema())),
  tool_call_id: Type.Optional(Type.String()),
  ...cacheControl,
});

export const ToolSchema = Type.Object({
  type: Type.Literal('function'),
  function: Type.Object({
    name: Type.String({ pattern: '^[a-zA-Z0-9_-]{1,64}$' }),
    description: Type.Optional(Type.String()),
    parameters: Type.Optional(Open({})),
    strict: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
  }),
  ...cacheControl,
});

export const ToolChoiceSchema = Type.Union([
  Type.Literal('none'),
  Type.Literal('auto'),
  Type.Literal('required'),
  Type.Object({ type: Type.Literal('function'), function: Type.Object({ name: Type.String() }) }),
]);

/** tollgate's routing fields, taken by chat, completions, embeddings and responses alike. Never sent upstream. */
export const routingFields = {
  models: Type.Optional(
    Type.Array(Type.String({ minLength: 1 }), {
      maxItems: 8,
      description: "Fallback models, tried in order after `model` fails (OpenRouter's field). Never sent upstream",
    }),
  ),
  timeout_ms: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 600_000,
      description:
        'Milliseconds the upstreams may take to start answering, over all retries and fallbacks (then 504). Never sent upstream',
    }),
  ),
};

/** A request's body as an upstream gets it: without tollgate's routing fields (upstreams refuse unknown fields). */
export function withoutRoutingFields<T extends { models?: unknown; timeout_ms?: unknown }>(body: T): T {
  if (body.models === undefined && body.timeout_ms === undefined) return body;
  const rest = { ...body };
  delete rest.models;
  delete rest.timeout_ms;
  return rest;
}

export const ChatRequestSchema = Open({
  model: Type.String({ minLength: 1 }),
  messages: Type.Array(ChatMessageSchema, { minItems: 1 }),
  stream: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
  stream_options: Type.Optional(
    Type.Union([Type.Object({ include_usage: Type.Optional(Type.Boolean()) }), Type.Null()]),
  ),
  max_tokens: OptionalNullable(Type.Integer({ minimum: 1 })),
  max_completion_tokens: OptionalNullable(Type.Integer({ minimum: 1 })),
  n: OptionalNullable(Type.Integer({ minimum: 1, maximum: 128 })),
  temperature: OptionalNullable(Type.Number({ minimum: 0, maximum: 2 })),
  top_p: OptionalNullable(Type.Number({ minimum: 0, maximum: 1 })),
  presence_penalty: OptionalNullable(Type.Number({ minimum: -2, maximum: 2 })),
  frequency_penalty: OptionalNullable(Type.Number({ minimum: -2, maximum: 2 })),
  seed: OptionalNullable(Type.Integer()),
  logprobs: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
  top_logprobs: OptionalNullable(Type.Integer({ minimum: 0, maximum: 20 })),
  stop: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String(), { maxItems: 4 }), Type.Null()])),
  user: Type.Optional(Type.String()),
  tools: Type.Optional(Type.Array(ToolSchema)),
  tool_choice: Type.Optional(ToolChoiceSchema),
  response_format: Type.Optional(
    Type.Object({
      type: Type.Union([Type.Literal('text'), Type.Literal('json_object'), Type.Literal('json_schema')]),
      json_schema: Type.Optional(Open({})),
    }),
  ),
  reasoning_effort: OptionalNullable(
    Type.Union(['none', 'minimal', 'low', 'medium', 'high', 'xhigh'].map((effort) => Type.Literal(effort))),
  ),
  /** Anthropic's extended thinking, for Anthropic's models (it wins over `reasoning_effort`). */
  thinking: Type.Optional(
    Type.Union([
      Type.Object({ type: Type.Literal('enabled'), budget_tokens: Type.Integer({ minimum: 1 }) }),
      Type.Object({ type: Type.Literal('adaptive') }),
      Type.Object({ type: Type.Literal('disabled') }),
    ]),
  ),
  /** Hosted web search: each search is billed at the model's `web_search` price (refused where it has none). */
  web_search_options: Type.Optional(
    Open({
      search_context_size: Type.Optional(
        Type.Union([Type.Literal('low'), Type.Literal('medium'), Type.Literal('high')]),
      ),
    }),
  ),
  service_tier: OptionalNullable(
    Type.String({ description: "A tier other than 'auto' or 'default' must have prices in the catalog (else 400)" }),
  ),
  ...routingFields,
});

/** The most web searches chat's `web_search_options` allows per `search_context_size` (LiteLLM's mapping; medium by default). */
export const WEB_SEARCHES_BY_SIZE: Readonly<Record<string, number>> = { low: 1, medium: 5, high: 10 };

export type ChatRequest = Static<typeof ChatRequestSchema>;
export type ChatMessage = Static<typeof ChatMessageSchema>;
export type Role = Static<typeof RoleSchema>;
export type TextPart = Static<typeof TextPartSchema>;
export type ImagePart = Static<typeof ImagePartSchema>;
export type ContentPart = Static<typeof ContentPartSchema>;
export type ToolCall = Static<ReturnType<typeof toolCallSchema>>;
export type ToolDefinition = Static<typeof ToolSchema>;
export type ToolChoice = Static<typeof ToolChoiceSchema>;
