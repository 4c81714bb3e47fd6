/**
 * OpenAI's chat-completions shapes every adapter takes and returns on the gateway's side, whatever its
 * provider's wire format on the other: the wire contract's types. An adapter returns answers before metering
 * (`usage` may be missing and carries no `cost`): the contract's `Upstream*` shapes, under those names.
 */
export type {
  ChatMessage,
  ChatRequest,
  ContentPart,
  FinishReason,
  ImagePart,
  Role,
  TextPart,
  ToolCall,
  ToolCallDelta as ChunkToolCallDelta,
  ToolChoice,
  ToolDefinition,
  UpstreamChunk,
  UpstreamCompletion,
  UpstreamUsage,
} from '../wire/index.js';
