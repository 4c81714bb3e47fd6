/**
 * OpenAI's Responses API request (`POST /v1/responses`) as tollgate takes it. Unknown fields pass validation: the
 * native path forwards them to OpenAI; the translated path keeps only what chat can say.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Open, OptionalNullable, routingFields } from '../../wire/index.js';

const InputTextSchema = Type.Object({ type: Type.Literal('input_text'), text: Type.String() });
const OutputTextSchema = Open({ type: Type.Literal('output_text'), text: Type.String() });
const RefusalSchema = Open({ type: Type.Literal('refusal'), refusal: Type.String() });
const InputImageSchema = Open({
  type: Type.Literal('input_image'),
  image_url: OptionalNullable(Type.String({ minLength: 1 })),
  file_id: OptionalNullable(Type.String()),
  detail: Type.Optional(Type.String()),
});
const InputFileSchema = Open({
  type: Type.Literal('input_file'),
  file_data: Type.Optional(Type.String()),
  file_id: OptionalNullable(Type.String()),
  file_url: Type.Optional(Type.String()),
  filename: Type.Optional(Type.String()),
});

export const ResponseContentPartSchema = Type.Union([
  InputTextSchema,
  OutputTextSchema,
  RefusalSchema,
  InputImageSchema,
  InputFileSchema,
]);

export const MessageItemSchema = Open({
  type: Type.Optional(Type.Literal('message')),
  role: Type.Union([
    Type.Literal('user'),
    Type.Literal('assistant'),
    Type.Literal('system'),
    Type.Literal('developer'),
  ]),
  content: Type.Union([Type.String(), Type.Array(ResponseContentPartSchema)]),
});

export const FunctionCallItemSchema = Open({
  type: Type.Literal('function_call'),
  call_id: Type.String({ minLength: 1 }),
  name: Type.String({ minLength: 1 }),
  namespace: Type.Optional(Type.String()),
  arguments: Type.String(),
});

/** A call of a custom (free-text) tool, sent back on the next turn. */
export const CustomToolCallItemSchema = Open({
  type: Type.Literal('custom_tool_call'),
  call_id: Type.String({ minLength: 1 }),
  name: Type.String({ minLength: 1 }),
  namespace: Type.Optional(Type.String()),
  input: Type.String(),
});

export const FunctionCallOutputItemSchema = Open({
  type: Type.Union([Type.Literal('function_call_output'), Type.Literal('custom_tool_call_output')]),
  call_id: Type.String({ minLength: 1 }),
  output: Type.Union([Type.String(), Type.Array(ResponseContentPartSchema)]),
});

export const ReasoningItemSchema = Open({ type: Type.Literal('reasoning') });

const ToolFields = {
  type: Type.String({ minLength: 1 }),
  name: Type.Optional(Type.String({ pattern: '^[a-zA-Z0-9_-]{1,64}$' })),
  description: OptionalNullable(Type.String()),
  parameters: OptionalNullable(Open({})),
  strict: OptionalNullable(Type.Boolean()),
  /** A custom tool's input format: `{type: "text"}` or `{type: "grammar", syntax, definition}`. */
  format: OptionalNullable(Open({ type: Type.String() })),
};

/**
 * A function tool, a custom (free-text) tool, a namespace grouping function and custom tools, or a built-in tool
 * (web_search, file_search, ...) that only OpenAI itself runs.
 */
export const ResponseToolSchema = Open({
  ...ToolFields,
  tools: Type.Optional(Type.Array(Open(ToolFields))),
});

/** Tools declared among the input items (Codex declares its tools so). */
export const AdditionalToolsItemSchema = Open({
  type: Type.Literal('additional_tools'),
  tools: Type.Array(ResponseToolSchema),
});

const KNOWN_ITEM_TYPES = [
  'message',
  'function_call',
  'function_call_output',
  'custom_tool_call',
  'custom_tool_call_output',
  'additional_tools',
  'reasoning',
];

export const InputItemSchema = Type.Union([
  MessageItemSchema,
  FunctionCallItemSchema,
  CustomToolCallItemSchema,
  FunctionCallOutputItemSchema,
  AdditionalToolsItemSchema,
  ReasoningItemSchema,
  // Other item types (item_reference, built-in tools' calls) go to OpenAI natively; translated, they are refused.
  Open({ type: Type.String({ pattern: `^(?!(${KNOWN_ITEM_TYPES.join('|')})$)` }) }),
]);

export const ResponseToolChoiceSchema = Type.Union([
  Type.Literal('none'),
  Type.Literal('auto'),
  Type.Literal('required'),
  Open({ type: Type.String({ minLength: 1 }), name: Type.Optional(Type.String()) }),
]);

export const TextFormatSchema = Type.Union([
  Type.Object({ type: Type.Literal('text') }),
  Type.Object({ type: Type.Literal('json_object') }),
  Open({
    type: Type.Literal('json_schema'),
    name: Type.String({ minLength: 1 }),
    schema: Open({}),
    description: Type.Optional(Type.String()),
    strict: OptionalNullable(Type.Boolean()),
  }),
]);

export const ResponseRequestSchema = Open({
  model: Type.String({ minLength: 1 }),
  input: Type.Union([Type.String(), Type.Array(InputItemSchema)]),
  instructions: OptionalNullable(Type.String()),
  tools: Type.Optional(Type.Array(ResponseToolSchema)),
  tool_choice: Type.Optional(ResponseToolChoiceSchema),
  text: Type.Optional(Open({ format: Type.Optional(TextFormatSchema) })),
  reasoning: OptionalNullable(
    Open({ effort: OptionalNullable(Type.String()), summary: OptionalNullable(Type.String()) }),
  ),
  max_output_tokens: OptionalNullable(Type.Integer({ minimum: 1 })),
  temperature: OptionalNullable(Type.Number({ minimum: 0, maximum: 2 })),
  top_p: OptionalNullable(Type.Number({ minimum: 0, maximum: 1 })),
  parallel_tool_calls: OptionalNullable(Type.Boolean()),
  previous_response_id: OptionalNullable(Type.String({ minLength: 1, maxLength: 256 })),
  store: OptionalNullable(Type.Boolean()),
  metadata: OptionalNullable(Type.Record(Type.String(), Type.String())),
  user: Type.Optional(Type.String()),
  stream: OptionalNullable(Type.Boolean()),
  ...routingFields,
});

export type ResponseRequest = Static<typeof ResponseRequestSchema>;
export type InputItem = Static<typeof InputItemSchema>;
export type MessageItem = Static<typeof MessageItemSchema>;
export type FunctionCallItem = Static<typeof FunctionCallItemSchema>;
export type CustomToolCallItem = Static<typeof CustomToolCallItemSchema>;
export type FunctionCallOutputItem = Static<typeof FunctionCallOutputItemSchema>;
export type AdditionalToolsItem = Static<typeof AdditionalToolsItemSchema>;
export type ResponseContentPart = Static<typeof ResponseContentPartSchema>;
export type ResponseTool = Static<typeof ResponseToolSchema>;
export type TextFormat = Static<typeof TextFormatSchema>;
