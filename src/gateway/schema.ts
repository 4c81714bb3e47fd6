/**
 * The chat request schema (TypeBox = JSON Schema): one source for validation, types and the OpenAPI document.
 * Unknown fields pass through to the provider. Checked after authentication, so a keyless request gets 401.
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import type { ValueError } from '@sinclair/typebox/errors';
import { GatewayError } from '../errors/index.js';
import type { ChatRequest } from '../providers/types.js';

const Nullable = <T extends TSchema>(schema: T) => Type.Optional(Type.Union([schema, Type.Null()]));

const ContentPart = Type.Union([
  Type.Object({ type: Type.Literal('text'), text: Type.String() }),
  Type.Object({
    type: Type.Literal('image_url'),
    image_url: Type.Object({ url: Type.String({ minLength: 1 }), detail: Type.Optional(Type.String()) }),
  }),
  // Other part types (input_audio, file, ...) pass through; a `text` or `image_url` part must have its field.
  Type.Object({ type: Type.String({ minLength: 1, pattern: '^(?!(text|image_url)$)' }) }),
]);

const ToolCall = Type.Object({
  id: Type.String(),
  type: Type.Literal('function'),
  function: Type.Object({ name: Type.String(), arguments: Type.String() }),
});

export const MessageSchema = Type.Object({
  role: Type.Union(['system', 'developer', 'user', 'assistant', 'tool', 'function'].map((r) => Type.Literal(r))),
  content: Type.Optional(Type.Union([Type.String(), Type.Array(ContentPart), Type.Null()])),
  name: Type.Optional(Type.String()),
  tool_calls: Type.Optional(Type.Array(ToolCall)),
  tool_call_id: Type.Optional(Type.String()),
});

const Tool = Type.Object({
  type: Type.Literal('function'),
  function: Type.Object({
    name: Type.String({ pattern: '^[a-zA-Z0-9_-]{1,64}$' }),
    description: Type.Optional(Type.String()),
    parameters: Type.Optional(Type.Object({})),
    strict: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
  }),
});

export const ChatRequestSchema = Type.Object({
  model: Type.String({ minLength: 1 }),
  messages: Type.Array(MessageSchema, { minItems: 1 }),
  stream: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
  stream_options: Type.Optional(Type.Union([Type.Object({ include_usage: Type.Optional(Type.Boolean()) }), Type.Null()])),
  max_tokens: Nullable(Type.Integer({ minimum: 1 })),
  max_completion_tokens: Nullable(Type.Integer({ minimum: 1 })),
  n: Nullable(Type.Integer({ minimum: 1, maximum: 128 })),
  temperature: Nullable(Type.Number({ minimum: 0, maximum: 2 })),
  top_p: Nullable(Type.Number({ minimum: 0, maximum: 1 })),
  presence_penalty: Nullable(Type.Number({ minimum: -2, maximum: 2 })),
  frequency_penalty: Nullable(Type.Number({ minimum: -2, maximum: 2 })),
  seed: Nullable(Type.Integer()),
  logprobs: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
  top_logprobs: Nullable(Type.Integer({ minimum: 0, maximum: 20 })),
  stop: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String(), { maxItems: 4 }), Type.Null()])),
  user: Type.Optional(Type.String()),
  tools: Type.Optional(Type.Array(Tool)),
  tool_choice: Type.Optional(
    Type.Union([
      Type.Literal('none'),
      Type.Literal('auto'),
      Type.Literal('required'),
      Type.Object({ type: Type.Literal('function'), function: Type.Object({ name: Type.String() }) }),
    ]),
  ),
  response_format: Type.Optional(
    Type.Object({
      type: Type.Union([Type.Literal('text'), Type.Literal('json_object'), Type.Literal('json_schema')]),
      json_schema: Type.Optional(Type.Object({})),
    }),
  ),
  /** Fallback models, tried in order after `model` fails (OpenRouter's field). */
  models: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { maxItems: 8 })),
  /** Milliseconds the upstreams may take to start answering, over all retries and fallbacks. */
  timeout_ms: Type.Optional(Type.Integer({ minimum: 1, maximum: 600_000 })),
});

export type ChatRequestBody = Static<typeof ChatRequestSchema>;


const checker = TypeCompiler.Compile(ChatRequestSchema);

export function validateChatRequest(body: unknown): ChatRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new GatewayError('invalid_request', { message: 'The request body must be a JSON object' });
  }
  if (checker.Check(body)) {
    checkContent((body as ChatRequestBody).messages);
    return body as ChatRequest;
  }
  const errors = [...checker.Errors(body)];
  // The deepest path is the most precise; unions report their members' failures at deeper paths.
  const first = errors.reduce((a, b) => (b.path.length > a.path.length ? b : a), errors[0]!);
  const param = pointerToParam(first.path);
  const missing = first.value === undefined;
  throw new GatewayError('invalid_request', {
    message: missing ? `Missing required parameter: '${param}'.` : `Invalid value for '${param}': ${describe(first)}.`,
    param,
  });
}

/**
 * Content is required (and not null) in every message but an assistant's that calls tools; the message schema
 * leaves it optional, so that a missing content is named per message rather than as a union of every role's shape.
 */
function checkContent(messages: ChatRequestBody['messages']): void {
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    if (message.content != null || message.role === 'function') continue;
    if (message.role === 'assistant' && (message.tool_calls?.length || (message as { function_call?: unknown }).function_call)) continue;
    const param = `messages[${i}].content`;
    throw new GatewayError('invalid_request', {
      message: message.content === null ? `Invalid value for '${param}': expected string, or array of content parts, got null.` : `Missing required parameter: '${param}'.`,
      param,
    });
  }
}

/** A union's own message says nothing ("Expected union value"): list what its members expected instead. */
function describe(error: ValueError): string {
  if (error.errors.length === 0) return error.message;
  const expected = error.errors
    .map((member) => member.First()?.message)
    .filter((message): message is string => Boolean(message) && message !== 'Expected null');
  return expected.length ? [...new Set(expected)].join(', or ') : error.message;
}

/** `/messages/0/role` -> `messages[0].role` */
export function pointerToParam(pointer: string): string {
  return pointer
    .split('/')
    .filter(Boolean)
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce((path, part) => (/^\d+$/.test(part) ? `${path}[${part}]` : path ? `${path}.${part}` : part), '');
}
