/**
 * OpenAI's chat-completions shapes every adapter takes and returns on the gateway's side, whatever its
 * provider's wire format on the other: the wire contract's types. An adapter returns answers before metering
 * (`usage` may be missing and carries no `cost`): the contract's `Upstream*` shapes, under those names. The same
 * shapes are also exported as `ChatCompletion`, `ChatCompletionChunk` and `Usage`, the names of the metered wire
 * types: deprecated, kept until the gateway has switched to the `Upstream*` names.
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
  /** @deprecated The upstream chunk: use UpstreamChunk (ChatCompletionChunk is the metered wire type). */
  UpstreamChunk as ChatCompletionChunk,
  /** @deprecated The upstream answer: use UpstreamCompletion (ChatCompletion is the metered wire type). */
  UpstreamCompletion as ChatCompletion,
  /** @deprecated The upstream usage: use UpstreamUsage (Usage is the metered wire type, with `cost`). */
  UpstreamUsage as Usage,
} from '../wire/index.js';
