/**
 * The wire contract: OpenAI's chat-completions format as tollgate speaks it, as TypeBox schemas (JSON Schema).
 * One source for request validation, the OpenAPI document, the package's exported types and the provider
 * adapters' types (each type is `Static<>` of its schema).
 */
export * from './chat-request.js';
export * from './chat-completion.js';
export { Nullable, Open, OptionalNullable, UnixSeconds, Usd } from './schema-kit.js';
