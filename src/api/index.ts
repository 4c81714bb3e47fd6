/**
 * The public API's shapes: the OpenAPI document, and TypeScript types for clients (package entry `tollgate/api`).
 * Request types come from the schemas that validate requests; response types from ./schemas.ts and the wire
 * contract (chat, completions, embeddings, Responses, Anthropic Messages).
 */
import type { Static } from '@sinclair/typebox';
import type {
  CallingKeySchema,
  CreditBalanceSchema,
  CreditPurchaseSchema,
  DeletedWebhookSchema,
  ErrorSchema,
  GenerationSchema,
  ModelListSchema,
  ModelSchema,
  UsageExportSchema,
  UsageGroupRowSchema,
  UsageRequestRowSchema,
  WebhookDeliverySchema,
  WebhookSchema,
  WebhookTestSchema,
} from './schemas.js';

export { openApiDocument } from './openapi.js';
export * as schemas from './schemas.js';
export type {
  AnthropicErrorBody as AnthropicError,
  AnthropicMessage,
  AnthropicStreamEvent,
  AnthropicTokenCount,
  ResponseObject,
  ResponseStreamEvent,
  ResponseUsage,
  ChatCompletion,
  ChatCompletionChunk,
  ChatRequest as ChatCompletionRequest,
  Completion,
  CompletionChunk,
  CompletionRequest,
  EmbeddingList,
  EmbeddingRequest,
  Usage,
} from '../wire/index.js';
export type { CreatePurchaseBody as CreatePurchaseRequest } from '../payments/index.js';
export type {
  CreateWebhookBody as CreateWebhookRequest,
  PatchWebhookBody as UpdateWebhookRequest,
} from '../webhooks/index.js';
export type { KnownWebhookEvent as WebhookEvent } from '../webhooks/receiver/index.js';

export type CreditBalance = Static<typeof CreditBalanceSchema>;
export type CreditPurchase = Static<typeof CreditPurchaseSchema>;
export type Model = Static<typeof ModelSchema>;
export type ModelList = Static<typeof ModelListSchema>;
export type Webhook = Static<typeof WebhookSchema>;
export type WebhookDelivery = Static<typeof WebhookDeliverySchema>;
export type DeletedWebhook = Static<typeof DeletedWebhookSchema>;
export type WebhookTest = Static<typeof WebhookTestSchema>;
export type ErrorResponse = Static<typeof ErrorSchema>;
export type Generation = Static<typeof GenerationSchema>;
export type UsageExport = Static<typeof UsageExportSchema>;
export type UsageRequestRow = Static<typeof UsageRequestRowSchema>;
export type UsageGroupRow = Static<typeof UsageGroupRowSchema>;
export type CallingKey = Static<typeof CallingKeySchema>;
export type {
  Account,
  AccountWithKeys,
  ApiKey,
  CreatedAccount,
  CreatedApiKey,
  CreditAdjustment,
  CreditRefund,
  LedgerEntry,
} from './admin-schemas.js';
export { renderReference } from './reference.js';
