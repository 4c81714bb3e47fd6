export { createChatCompletion, type ChatInput, type ChatResult } from './chat.js';
export type { GatewayDeps } from './context.js';
export { rateLimitHeaders } from './headers.js';
export { ChatRequestSchema, type ChatRequestBody } from './schema.js';
export { Idempotency, IDEMPOTENCY_TTL_MS, type IdempotencyOptions } from './idempotency.js';
