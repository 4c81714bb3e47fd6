export { accountOf, admit, admitRate, authenticate, type AdmitDeps } from './admit.js';
export { createChatCompletion, type ChatInput, type ChatResult } from './chat.js';
export type { GatewayDeps } from './deps.js';
export { rateLimitHeaders } from './headers.js';
export { ChatRequestSchema, type ChatRequestBody } from './schema.js';
export { Idempotency, IDEMPOTENCY_TTL_MS, type IdempotencyOptions } from './idempotency.js';
export { createEmbeddings } from './embeddings.js';
export type { RequestInput } from './fail.js';
