/**
 * OpenAI's embeddings format: the request a client sends to `POST /v1/embeddings` and the list it gets back.
 * `input` is one text, several texts, one token array or several token arrays.
 */
import { Type, type Static } from '@sinclair/typebox';
import { routingFields } from './chat-request.js';
import { Open, Usd } from './schema-kit.js';

/** OpenAI's bounds: 2,048 inputs per request. */
export const MAX_EMBEDDING_INPUTS = 2048;

const TokenArray = Type.Array(Type.Integer({ minimum: 0 }), { minItems: 1 });

const Text = Type.String({ minLength: 1 });

export const EmbeddingInputSchema = Type.Union([
  Text,
  Type.Array(Text, { minItems: 1, maxItems: MAX_EMBEDDING_INPUTS }),
  TokenArray,
  Type.Array(TokenArray, { minItems: 1, maxItems: MAX_EMBEDDING_INPUTS }),
]);

export const EmbeddingRequestSchema = Open(
  {
    model: Type.String({ minLength: 1 }),
    input: EmbeddingInputSchema,
    dimensions: Type.Optional(Type.Integer({ minimum: 1 })),
    encoding_format: Type.Optional(Type.Union([Type.Literal('float'), Type.Literal('base64')])),
    user: Type.Optional(Type.String()),
    ...routingFields,
  },
  { $id: 'EmbeddingRequest' },
);
export type EmbeddingRequest = Static<typeof EmbeddingRequestSchema>;

export const EmbeddingUsageSchema = Type.Object(
  {
    prompt_tokens: Type.Integer({ minimum: 0 }),
    total_tokens: Type.Integer({ minimum: 0 }),
    cost: Usd('The amount debited for this request; 0 for test keys'),
  },
  { $id: 'EmbeddingUsage' },
);

export const EmbeddingSchema = Type.Object({
  object: Type.Literal('embedding'),
  index: Type.Integer({ minimum: 0 }),
  embedding: Type.Union([
    Type.Array(Type.Number()),
    Type.String({ description: 'little-endian float32 values, base64 (`encoding_format: "base64"`)' }),
  ]),
});

export const EmbeddingListSchema = Type.Object(
  {
    object: Type.Literal('list'),
    data: Type.Array(EmbeddingSchema),
    model: Type.String(),
    usage: EmbeddingUsageSchema,
  },
  { $id: 'EmbeddingList' },
);
export type EmbeddingList = Static<typeof EmbeddingListSchema>;
