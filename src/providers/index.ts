/**
 * The providers' public face: the registry of configured adapters, the contract every adapter keeps, the wire
 * shapes it speaks on the gateway's side, and what the gateway shares with the adapters (answer cap, redaction).
 * Nothing outside this folder imports an adapter or a shared file directly.
 */
export { ProviderSet } from './registry.js';
export { UpstreamError, type Provider, type ProviderCall } from './provider.js';
export {
  completionPrompts,
  promptTokensOf,
  type CompletionPrompt,
  type UpstreamTextCompletion,
  type TextCompletionCall,
} from './completions.js';
export { RESPONSE_END_EVENTS, type ResponsesCall, type ResponsesJson } from './responses.js';
export type { MessagesCall, MessagesEvent, MessagesJson } from './messages.js';
export { embeddingInputs, type EmbeddingCall, type EmbeddingInput, type UpstreamEmbeddings } from './embeddings.js';
export type { ChatRequest, ToolDefinition, UpstreamChunk, UpstreamCompletion, UpstreamUsage } from './types.js';
export { isUpstreamChunk, isUpstreamCompletion } from './checks.js';
export { MAX_ANSWER_BYTES, tooLarge } from './body.js';
export { redactCredentials, redactForClient } from './redact.js';
