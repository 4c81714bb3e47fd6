/** OpenAI's Responses API: its request schema, and its translation to and from the internal chat shapes. */
export {
  ResponseRequestSchema,
  type ResponseRequest,
  type InputItem,
  type ResponseTool,
  type TextFormat,
} from './schema.js';
export { toChatRequest } from './to-chat.js';
export { responseFromChat, responseShell, responseUsage, type ResponseMeta } from './from-chat.js';
export { ChatStreamTranslator } from './chat-stream.js';
export { billedResponse, deliveredText, inputText, outputText, responseId, withModel } from './native.js';
export {
  FINAL_EVENTS,
  sseOf,
  type OutputItem,
  type ResponseEvent,
  type ResponseObject,
  type ResponseUsage,
} from './types.js';
