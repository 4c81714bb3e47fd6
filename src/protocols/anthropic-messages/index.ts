/** Anthropic's Messages API on tollgate's side: its request schema, its translation to and from chat, its errors. */
export * from './schema.js';
export { toChatRequest } from './to-chat.js';
export {
  MessagesStreamWriter,
  messageFromCompletion,
  messagesUsage,
  messagesEvent,
  stopReasonOf,
  type AnthropicMessage,
  type StopReason,
} from './from-chat.js';
export { anthropicErrorBody, anthropicErrorType, type AnthropicErrorBody } from './errors.js';
