/**
 * OpenAI's Responses API answers (`POST /v1/responses`) as tollgate sends them: the Response object, its output
 * items and usage (with `cost`), and the typed stream events, each a subset of what OpenAI's published OpenAPI
 * document requires of it (test/e2e/responses-openai-schema.test.ts checks answers against that document). Those
 * with an `$id` are components of tollgate's OpenAPI document. A Response from OpenAI itself is passed through, so
 * the objects are open (OpenAI's other fields and output item types pass), and `Upstream*` are the lenient shapes
 * the native adapter checks OpenAI's JSON against.
 */
import { Type, type ObjectOptions, type Static, type TSchema } from '@sinclair/typebox';
import { Nullable, Open, OptionalNullable, UnixSeconds, Usd } from './schema-kit.js';

const ItemStatusSchema = Type.Union([
  Type.Literal('in_progress'),
  Type.Literal('completed'),
  Type.Literal('incomplete'),
]);

export const ResponseOutputTextSchema = Open({
  type: Type.Literal('output_text'),
  text: Type.String(),
  annotations: Type.Array(Type.Unknown()),
  logprobs: Type.Array(Type.Unknown(), { description: 'Empty on an answer translated from chat' }),
});

export const ResponseRefusalSchema = Open({ type: Type.Literal('refusal'), refusal: Type.String() });

export const ResponseMessageOutputSchema = Open({
  type: Type.Literal('message'),
  id: Type.String(),
  status: ItemStatusSchema,
  role: Type.Literal('assistant'),
  content: Type.Array(Type.Union([ResponseOutputTextSchema, ResponseRefusalSchema])),
});

export const ResponseFunctionCallOutputSchema = Open({
  type: Type.Literal('function_call'),
  id: Type.String(),
  call_id: Type.String(),
  name: Type.String(),
  namespace: Type.Optional(Type.String()),
  arguments: Type.String({ description: 'JSON text' }),
  status: ItemStatusSchema,
});

/** A call of a custom (free-text) tool: its `input` is the text itself. */
export const ResponseCustomToolCallOutputSchema = Open({
  type: Type.Literal('custom_tool_call'),
  id: Type.String(),
  call_id: Type.String(),
  name: Type.String(),
  namespace: Type.Optional(Type.String()),
  input: Type.String(),
  status: ItemStatusSchema,
});

/** The item types tollgate writes itself; OpenAI's own answers may hold others (reasoning, built-in tools' calls). */
const KNOWN_OUTPUT_TYPES = ['message', 'function_call', 'custom_tool_call'];

export const ResponseOutputItemSchema = Type.Union([
  ResponseMessageOutputSchema,
  ResponseFunctionCallOutputSchema,
  ResponseCustomToolCallOutputSchema,
  Open(
    { type: Type.String({ minLength: 1, pattern: `^(?!(${KNOWN_OUTPUT_TYPES.join('|')})$)` }) },
    { description: "OpenAI's other item types (reasoning, web_search_call, ...), from OpenAI itself only" },
  ),
]);

export const ResponseUsageSchema = Open(
  {
    input_tokens: Type.Integer({ minimum: 0 }),
    input_tokens_details: Open({
      cached_tokens: Type.Integer({ minimum: 0 }),
      cache_write_tokens: Type.Integer({ minimum: 0 }),
    }),
    output_tokens: Type.Integer({ minimum: 0 }),
    output_tokens_details: Open({ reasoning_tokens: Type.Integer({ minimum: 0 }) }),
    total_tokens: Type.Integer({ minimum: 0 }),
    cost: Usd('The amount debited for this request; 0 for test keys'),
  },
  { $id: 'ResponseUsage' },
);

export const ResponseStatusSchema = Type.Union([
  Type.Literal('in_progress'),
  Type.Literal('completed'),
  Type.Literal('incomplete'),
  Type.Literal('failed'),
  Type.Literal('queued'),
  Type.Literal('cancelled'),
]);

/** The tool calls and the message tollgate writes itself (a Response translated from chat). */
export const ResponseOwnOutputItemSchema = Type.Union([
  ResponseMessageOutputSchema,
  ResponseFunctionCallOutputSchema,
  ResponseCustomToolCallOutputSchema,
]);

/** A Response whose output items are `item`'s. */
const responseOf = <T extends TSchema>(item: T, options?: ObjectOptions) =>
  Open(
    {
      id: Type.String(),
      object: Type.Literal('response'),
      created_at: UnixSeconds,
      status: ResponseStatusSchema,
      error: Nullable(Open({ code: Type.String(), message: Type.String() })),
      incomplete_details: Nullable(Open({ reason: Type.String() })),
      model: Type.String({ description: 'The catalog id of the model that answered' }),
      output: Type.Array(item),
      usage: Type.Optional(ResponseUsageSchema),
      instructions: Type.Optional(Type.Unknown()),
      max_output_tokens: OptionalNullable(Type.Integer()),
      metadata: OptionalNullable(Type.Record(Type.String(), Type.String())),
      parallel_tool_calls: Type.Optional(Type.Boolean()),
      previous_response_id: OptionalNullable(Type.String()),
      store: Type.Optional(Type.Boolean()),
      temperature: OptionalNullable(Type.Number()),
      top_p: OptionalNullable(Type.Number()),
      tool_choice: Type.Optional(Type.Unknown()),
      tools: Type.Optional(Type.Array(Type.Unknown())),
      user: Type.Optional(Type.String()),
    },
    options,
  );

/** The Response `POST /v1/responses` answers (and its stream's `response.*` events carry). */
export const ResponseSchema = responseOf(ResponseOutputItemSchema, {
  $id: 'Response',
  description: "OpenAI's Response object; `usage` adds `cost` (USD), left out until the answer is complete",
});

/** A Response tollgate writes from a chat answer: only the output items it writes itself. */
export const ResponseFromChatSchema = responseOf(ResponseOwnOutputItemSchema);

/** Every stream event: its type and its place in the stream (counted from 0). */
const eventHead = { sequence_number: Type.Integer({ minimum: 0 }) };
const itemPlace = { ...eventHead, item_id: Type.String(), output_index: Type.Integer({ minimum: 0 }) };

const KNOWN_EVENT_TYPES = [
  'response.created',
  'response.in_progress',
  'response.completed',
  'response.incomplete',
  'response.failed',
  'response.output_item.added',
  'response.output_item.done',
  'response.content_part.added',
  'response.content_part.done',
  'response.output_text.delta',
  'response.output_text.done',
  'response.refusal.delta',
  'response.refusal.done',
  'response.function_call_arguments.delta',
  'response.function_call_arguments.done',
  'response.custom_tool_call_input.delta',
  'response.custom_tool_call_input.done',
  'error',
];

const literals = (...types: string[]) => Type.Union(types.map((type) => Type.Literal(type)));

export const ResponseStreamEventSchema = Type.Union(
  [
    Open({
      type: literals(
        'response.created',
        'response.in_progress',
        'response.completed',
        'response.incomplete',
        'response.failed',
      ),
      ...eventHead,
      response: ResponseSchema,
    }),
    Open({
      type: literals('response.output_item.added', 'response.output_item.done'),
      ...eventHead,
      output_index: Type.Integer({ minimum: 0 }),
      item: ResponseOutputItemSchema,
    }),
    Open({
      type: literals('response.content_part.added', 'response.content_part.done'),
      ...itemPlace,
      content_index: Type.Integer({ minimum: 0 }),
      part: Open({ type: Type.String() }),
    }),
    Open({
      type: Type.Literal('response.output_text.delta'),
      ...itemPlace,
      content_index: Type.Integer({ minimum: 0 }),
      delta: Type.String(),
      logprobs: Type.Array(Type.Unknown()),
    }),
    Open({
      type: Type.Literal('response.output_text.done'),
      ...itemPlace,
      content_index: Type.Integer({ minimum: 0 }),
      text: Type.String(),
      logprobs: Type.Array(Type.Unknown()),
    }),
    Open({
      type: literals(
        'response.refusal.delta',
        'response.function_call_arguments.delta',
        'response.custom_tool_call_input.delta',
      ),
      ...itemPlace,
      delta: Type.String(),
    }),
    Open({
      type: Type.Literal('response.refusal.done'),
      ...itemPlace,
      content_index: Type.Integer({ minimum: 0 }),
      refusal: Type.String(),
    }),
    Open({ type: Type.Literal('response.function_call_arguments.done'), ...itemPlace, arguments: Type.String() }),
    Open({ type: Type.Literal('response.custom_tool_call_input.done'), ...itemPlace, input: Type.String() }),
    Open({
      type: Type.Literal('error'),
      ...eventHead,
      message: Type.String(),
      code: Nullable(Type.String()),
      param: Nullable(Type.String()),
    }),
    Open(
      {
        type: Type.String({ minLength: 1, pattern: `^(?!(${KNOWN_EVENT_TYPES.join('|').replace(/\./g, '\\.')})$)` }),
        ...eventHead,
      },
      { description: "OpenAI's other events (reasoning summaries, built-in tools' progress), from OpenAI itself only" },
    ),
  ],
  {
    $id: 'ResponseStreamEvent',
    description: 'One typed event of a streamed Response: `event: <type>` then `data: <this JSON>`',
  },
);

/** The shape every stream event has, whatever its type: what the stream translators build and relay. */
export const ResponseEventEnvelopeSchema = Open({ type: Type.String(), ...eventHead });

/**
 * A Response as the native adapter takes it from OpenAI before metering: an object `response` with its output
 * items (each with a type); the rest (usage included, which metering checks itself) passes through.
 */
export const UpstreamResponseSchema = Open({
  object: Type.Literal('response'),
  output: Type.Array(Open({ type: Type.String() })),
});

/** One event of OpenAI's Responses stream as the native adapter takes it: an object with a type. */
export const UpstreamResponseEventSchema = Open({ type: Type.String() });

export type ResponseOutputText = Static<typeof ResponseOutputTextSchema>;
export type ResponseRefusal = Static<typeof ResponseRefusalSchema>;
export type ResponseMessageOutput = Static<typeof ResponseMessageOutputSchema>;
export type ResponseFunctionCallOutput = Static<typeof ResponseFunctionCallOutputSchema>;
export type ResponseCustomToolCallOutput = Static<typeof ResponseCustomToolCallOutputSchema>;
export type ResponseOutputItem = Static<typeof ResponseOutputItemSchema>;
export type ResponseUsage = Static<typeof ResponseUsageSchema>;
export type ResponseStatus = Static<typeof ResponseStatusSchema>;
export type ResponseObject = Static<typeof ResponseSchema>;
export type ResponseFromChat = Static<typeof ResponseFromChatSchema>;
export type ResponseOwnOutputItem = Static<typeof ResponseOwnOutputItemSchema>;
export type ResponseStreamEvent = Static<typeof ResponseStreamEventSchema>;
export type ResponseEventEnvelope = Static<typeof ResponseEventEnvelopeSchema>;
export type UpstreamResponse = Static<typeof UpstreamResponseSchema>;
export type UpstreamResponseEvent = Static<typeof UpstreamResponseEventSchema>;
