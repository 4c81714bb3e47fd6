/**
 * The OpenAPI paths of the gateway's own API: chat completions and models, credit balance and purchases (with
 * Stripe's event deliveries), and the operations endpoints (health, readiness, metrics, this document).
 */
import { CreatePurchaseSchema } from '../payments/index.js';
import { CountTokensRequestSchema, MessagesRequestSchema } from '../protocols/anthropic-messages/index.js';
import { ResponseRequestSchema } from '../protocols/openai-responses/index.js';
import {
  AnthropicErrorSchema,
  AnthropicMessageSchema,
  AnthropicStreamEventSchema,
  AnthropicTokenCountSchema,
  ChatRequestSchema,
  CompletionChunkSchema,
  CompletionRequestSchema,
  CompletionSchema,
  EmbeddingListSchema,
  EmbeddingRequestSchema,
  ResponseSchema,
  ResponseStreamEventSchema,
} from '../wire/index.js';
import { json, operation, path, query, ref, type Json } from './openapi-builder.js';
import {
  ChatCompletionChunkSchema,
  ChatCompletionSchema,
  CreditBalanceSchema,
  CreditPurchaseSchema,
  HealthSchema,
  ModelListSchema,
  ModelSchema,
  OpenApiDocumentSchema,
  Page,
  ReadinessSchema,
  StripeEventReceiptSchema,
} from './schemas.js';

export function chatPaths(): Json {
  return {
    '/v1/chat/completions': { post: chatOperation() },
    '/v1/completions': {
      post: operation(
        'completions',
        'Legacy text completion of `prompt` (models with `capabilities.completion`); `n` choices per prompt, `max_tokens` 16 when unset; streamed when `stream` is true',
        {
          body: CompletionRequestSchema,
          parameters: [IDEMPOTENCY_KEY],
          ok: {
            'application/json': { schema: ref(CompletionSchema) },
            'text/event-stream': {
              schema: { type: 'string', description: 'Lines `data: <CompletionChunk JSON>`, then `data: [DONE]`' },
              'x-event-schema': ref(CompletionChunkSchema),
            },
          },
          errors: [400, 401, 402, 403, 404, 409, 413, 422, 429, 502, 503, 504],
        },
      ),
    },
    '/v1/embeddings': {
      post: operation(
        'embeddings',
        'Create embeddings of one or more texts (or token arrays), billed at their input tokens; `encoding_format: "base64"` sends float32 values',
        {
          body: EmbeddingRequestSchema,
          parameters: [IDEMPOTENCY_KEY],
          ok: json(EmbeddingListSchema),
          errors: [400, 401, 402, 403, 404, 409, 413, 422, 429, 502, 503, 504],
        },
      ),
    },
    '/v1/responses': {
      post: operation(
        'responses',
        "OpenAI's Responses API: passed through to OpenAI for models it serves (built-in tools, `previous_response_id`), translated through chat for the others; `usage.cost` in the Response",
        {
          body: ResponseRequestSchema,
          parameters: [IDEMPOTENCY_KEY],
          ok: {
            'application/json': { schema: ref(ResponseSchema) },
            'text/event-stream': {
              schema: {
                type: 'string',
                description:
                  'Typed events `event: <type>` / `data: <ResponseStreamEvent JSON>`, from `response.created` to `response.completed` (its `usage` with `cost`); a failure after the first byte is `response.failed`',
              },
              'x-event-schema': ref(ResponseStreamEventSchema),
            },
          },
          errors: [400, 401, 402, 403, 404, 409, 413, 422, 429, 502, 503, 504],
        },
      ),
    },
    ...messagesPaths(),
    '/v1/models': {
      get: operation('models', 'List models with pricing, capabilities, performance and status', {
        parameters: [
          query(
            'include_capabilities',
            { type: 'boolean', default: false },
            'Adds `modalities` and `supported_parameters`',
          ),
          query('provider', { type: 'string' }, 'Only this provider id'),
          query(
            'capability',
            {
              type: 'string',
              enum: [
                'chat',
                'completion',
                'image',
                'embedding',
                'function_calling',
                'vision',
                'embeddings',
                'json_mode',
              ],
            },
            'Only models with this capability',
          ),
          query('active_only', { type: 'boolean', default: true }, 'Only models whose status is active'),
        ],
        ok: json(ModelListSchema),
        errors: [400, 401, 429],
      }),
    },
    '/v1/models/{model}': {
      get: operation('models', 'One model (aliases resolve to the versioned id)', {
        parameters: [path('model', 'A model id or alias; may contain `/`')],
        ok: json(ModelSchema),
        errors: [401, 404, 429],
      }),
    },
  };
}

const IDEMPOTENCY_KEY = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Up to 255 printable ASCII characters. A retry within 24 h returns the first answer and is not charged again (409 while the first runs, 422 with another body)',
  schema: { type: 'string', minLength: 1, maxLength: 255 },
};

/**
 * Anthropic's Messages API (Claude Code and Anthropic's SDKs): the key in `x-api-key` or `Authorization`, errors
 * in Anthropic's envelope.
 */
function messagesPaths(): Json {
  const anthropic = (summary: string, spec: Parameters<typeof operation>[2]): Json => {
    const built = operation('messages', summary, spec);
    const error = json(AnthropicErrorSchema);
    const isJson = (value: unknown): value is Json => typeof value === 'object' && value !== null;
    if (isJson(built.responses))
      for (const [status, response] of Object.entries(built.responses))
        if (status !== '200' && isJson(response)) response.content = error;
    return built;
  };
  return {
    '/v1/messages': {
      post: anthropic(
        "Create a Message (Anthropic's Messages API): natively to Anthropic, translated for other providers; the cost is in `x-tollgate-cost`, or on a stream's `message_delta` usage",
        {
          body: MessagesRequestSchema,
          parameters: [IDEMPOTENCY_KEY],
          ok: {
            'application/json': { schema: ref(AnthropicMessageSchema) },
            'text/event-stream': {
              schema: {
                type: 'string',
                description:
                  "Anthropic's events `event: <type>` / `data: <AnthropicStreamEvent JSON>`: message_start, content_block_start/delta/stop, message_delta (usage, `cost`), message_stop; an error after the first byte is one `error` event",
              },
              'x-event-schema': ref(AnthropicStreamEventSchema),
            },
          },
          errors: [400, 401, 402, 403, 404, 409, 413, 422, 429, 502, 503, 504],
        },
      ),
    },
    '/v1/messages/count_tokens': {
      post: anthropic("Count a Messages request's input tokens (tollgate's count); not charged", {
        body: CountTokensRequestSchema,
        ok: json(AnthropicTokenCountSchema),
        errors: [400, 401, 403, 404, 429],
      }),
    },
  };
}

function chatOperation(): Json {
  return operation('chat', 'Create a chat completion (streamed as server-sent events when `stream` is true)', {
    body: ChatRequestSchema,
    parameters: [IDEMPOTENCY_KEY],
    ok: {
      'application/json': { schema: ref(ChatCompletionSchema) },
      'text/event-stream': {
        schema: {
          type: 'string',
          description:
            'Lines `data: <ChatCompletionChunk JSON>`, then `data: [DONE]`; an error after the first byte is one `data: {"error": ...}` event',
        },
        'x-event-schema': ref(ChatCompletionChunkSchema),
      },
    },
    errors: [400, 401, 402, 403, 404, 409, 413, 422, 429, 502, 503, 504],
  });
}

export function creditPaths(): Json {
  const errors = [400, 401, 403, 429];
  return {
    '/v1/credits': {
      get: operation('credits', "Balance, usage, limits and billing of the key's account", {
        ok: json(CreditBalanceSchema),
        errors: [401, 429],
      }),
    },
    '/v1/credits/purchases': {
      post: operation(
        'credits',
        'Buy credit (full keys): a Stripe Checkout session to pay at `checkout_url`; credited once Stripe confirms the payment. 400 when purchasing is off (no Stripe key) or `amount` is out of bounds; 502 when Stripe fails',
        {
          body: CreatePurchaseSchema,
          ok: json(CreditPurchaseSchema),
          okStatus: 201,
          errors: [...errors, 502],
        },
      ),
      get: operation('credits', "The account's credit purchases, newest first", {
        parameters: [
          query('limit', { type: 'integer', minimum: 1, maximum: 100, default: 20 }, 'Page size'),
          query('before', { type: 'string' }, 'Id of the last item of the previous page'),
        ],
        ok: json(Page(CreditPurchaseSchema)),
        errors,
      }),
    },
    '/v1/credits/purchases/{id}': {
      get: operation('credits', 'One credit purchase of the account', {
        parameters: [path('id', 'Purchase id (`cp_...`)')],
        ok: json(CreditPurchaseSchema),
        errors: [...errors, 404],
      }),
    },
    '/webhooks/stripe': {
      post: operation(
        'credits',
        "Stripe's event deliveries (signed with the Stripe-Signature header; 400 when it does not verify, nothing changes)",
        {
          ok: json(StripeEventReceiptSchema),
          errors: [400],
          security: [],
        },
      ),
    },
  };
}

export function operationsPaths(): Json {
  return {
    '/v1/openapi.json': {
      get: operation('operations', 'This document', {
        ok: json(OpenApiDocumentSchema),
        errors: [],
        security: [],
      }),
    },
    '/health': {
      get: operation('operations', 'Liveness: the process answers', {
        ok: json(HealthSchema),
        errors: [],
        security: [],
      }),
    },
    '/ready': {
      get: operation('operations', 'Readiness: the database answers (503 otherwise)', {
        ok: json(ReadinessSchema),
        errors: [503],
        security: [],
      }),
    },
    '/metrics': {
      get: operation('operations', 'Prometheus metrics (admin token unless metrics_public)', {
        ok: { 'text/plain': { schema: { type: 'string' } } },
        errors: [401, 429],
        security: [{ adminToken: [] }],
      }),
    },
  };
}
