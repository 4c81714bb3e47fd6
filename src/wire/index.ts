/**
 * The wire contract: OpenAI's chat-completions, completions, embeddings and Responses formats and Anthropic's Messages answers, the way tollgate speaks them, in TypeBox
 * schemas (JSON Schema).
 * One source for request validation, the OpenAPI document, the package's exported types and the provider
 * adapters' types (each type is `Static<>` of its schema).
 */
export * from './chat-request.js';
export * from './chat-completion.js';
export * from './embeddings.js';
export * from './completions.js';
export { DONE, isDone, type StreamEvent } from './stream-event.js';
export * from './responses.js';
export * from './anthropic.js';
export { isObject } from './guards.js';
export { Nullable, Open, OptionalNullable, UnixSeconds, Usd } from './schema-kit.js';
