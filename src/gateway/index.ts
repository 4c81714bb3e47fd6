export {
  accountOf,
  admit,
  admitRate,
  authenticate,
  refuseBeforeReading,
  type AdmitDeps,
  type Credentials,
} from './admit.js';
export { createChatCompletion } from './chat.js';
export type { GatewayDeps } from './deps.js';
export { rateLimitHeaders } from './headers.js';
export { ChatRequestSchema, type ChatRequestBody } from './schema.js';
export { Idempotency, IDEMPOTENCY_TTL_MS, type IdempotencyOptions } from './idempotency.js';
export { createEmbeddings } from './embeddings.js';
export { createResponse, type ResponseResult } from './responses.js';
export { authorizationOf, countMessageTokens, createMessage } from './messages.js';
export { createCompletion } from './completions.js';
export type { Answer, RequestInput } from './request.js';
