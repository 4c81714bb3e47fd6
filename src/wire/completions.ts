/**
 * OpenAI's legacy text-completions format: the request a client sends to `POST /v1/completions`, the
 * `text_completion` answer and its stream chunks. `prompt` is one text, several texts, one token array or several
 * token arrays; each prompt gets `n` choices, numbered prompt by prompt.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Nullable, Open, OptionalNullable, UnixSeconds } from './schema-kit.js';
import { UpstreamUsageSchema, UsageSchema } from './chat-completion.js';
import { routingFields } from './chat-request.js';

/** The most prompts one request may carry (OpenAI's bound for batched inputs). */
export const MAX_COMPLETION_PROMPTS = 2048;

const TokenArray = Type.Array(Type.Integer({ minimum: 0 }), { minItems: 1 });

export const CompletionPromptSchema = Type.Union([
  Type.String(),
  Type.Array(Type.String(), { minItems: 1, maxItems: MAX_COMPLETION_PROMPTS }),
  TokenArray,
  Type.Array(TokenArray, { minItems: 1, maxItems: MAX_COMPLETION_PROMPTS }),
]);

export const CompletionRequestSchema = Open(
  {
    model: Type.String({ minLength: 1 }),
    prompt: CompletionPromptSchema,
    suffix: OptionalNullable(Type.String()),
    max_tokens: OptionalNullable(
      Type.Integer({ minimum: 0, description: 'Completion tokens per choice; 16 if unset' }),
    ),
    temperature: OptionalNullable(Type.Number({ minimum: 0, maximum: 2 })),
    top_p: OptionalNullable(Type.Number({ minimum: 0, maximum: 1 })),
    n: OptionalNullable(Type.Integer({ minimum: 1, maximum: 128 })),
    best_of: OptionalNullable(Type.Integer({ minimum: 1, maximum: 20 })),
    stream: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
    stream_options: Type.Optional(
      Type.Union([Type.Object({ include_usage: Type.Optional(Type.Boolean()) }), Type.Null()]),
    ),
    logprobs: OptionalNullable(Type.Integer({ minimum: 0, maximum: 5 })),
    echo: Type.Optional(Type.Union([Type.Boolean(), Type.Null()])),
    stop: Type.Optional(Type.Union([Type.String(), Type.Array(Type.String(), { maxItems: 4 }), Type.Null()])),
    presence_penalty: OptionalNullable(Type.Number({ minimum: -2, maximum: 2 })),
    frequency_penalty: OptionalNullable(Type.Number({ minimum: -2, maximum: 2 })),
    logit_bias: OptionalNullable(Type.Record(Type.String(), Type.Number({ minimum: -100, maximum: 100 }))),
    seed: OptionalNullable(Type.Integer()),
    user: Type.Optional(Type.String()),
    ...routingFields,
  },
  { $id: 'CompletionRequest' },
);
export type CompletionRequest = Static<typeof CompletionRequestSchema>;

export const CompletionFinishReasonSchema = Type.Union([
  Type.Literal('stop'),
  Type.Literal('length'),
  Type.Literal('content_filter'),
]);

const LogprobsSchema = Nullable(
  Open({
    tokens: Type.Optional(Type.Array(Type.String())),
    token_logprobs: Type.Optional(Type.Array(Nullable(Type.Number()))),
    top_logprobs: Type.Optional(Type.Array(Nullable(Type.Record(Type.String(), Type.Number())))),
    text_offset: Type.Optional(Type.Array(Type.Integer())),
  }),
);

const choice = {
  text: Type.String(),
  index: Type.Integer({ minimum: 0, description: 'prompt index × n + choice' }),
  logprobs: LogprobsSchema,
  finish_reason: Nullable(CompletionFinishReasonSchema),
};

const head = {
  id: Type.String(),
  object: Type.Literal('text_completion'),
  created: UnixSeconds,
  model: Type.String({ description: 'The catalog id of the model that answered' }),
  system_fingerprint: OptionalNullable(Type.String()),
};

export const CompletionSchema = Type.Object(
  { ...head, choices: Type.Array(Type.Object(choice)), usage: UsageSchema },
  { $id: 'Completion' },
);

export const CompletionChunkSchema = Type.Object(
  { ...head, choices: Type.Array(Type.Object(choice)), usage: Type.Optional(Nullable(UsageSchema)) },
  {
    $id: 'CompletionChunk',
    description: 'One `data:` event of a streamed completion; the stream ends with `data: [DONE]`',
  },
);

/** An answer as an adapter returns it, before metering: `usage` may be missing; unknown fields pass through. */
export const UpstreamTextCompletionSchema = Open({
  ...head,
  model: Type.String(),
  choices: Type.Array(Open(choice)),
  usage: Type.Optional(Nullable(UpstreamUsageSchema)),
});

/** What an adapter checks of an upstream text completion or chunk: choices with text and an index. */
export const ReadableUpstreamTextCompletionSchema = Open({
  choices: Type.Array(Open({ text: Type.String(), index: Type.Integer() })),
});

export type Completion = Static<typeof CompletionSchema>;
export type CompletionChunk = Static<typeof CompletionChunkSchema>;
export type CompletionFinishReason = Static<typeof CompletionFinishReasonSchema>;
/** An upstream answer or stream chunk (the same shape: a chunk's choices carry the next piece of text). */
export type UpstreamTextCompletion = Static<typeof UpstreamTextCompletionSchema>;
