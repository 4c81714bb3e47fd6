/**
 * The one interface every provider adapter implements. Adapters speak OpenAI's chat-completions shapes on our
 * side and their provider's wire format on the other; the gateway does auth, money, limits and metering once.
 */

export type Role = 'system' | 'developer' | 'user' | 'assistant' | 'tool' | 'function';

export interface TextPart {
  type: 'text';
  text: string;
}
export interface ImagePart {
  type: 'image_url';
  image_url: { url: string; detail?: 'auto' | 'low' | 'high' };
}
export type ContentPart = TextPart | ImagePart | { type: string; [key: string]: unknown };

export interface ToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface ChatMessage {
  role: Role;
  content?: string | ContentPart[] | null;
  name?: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  [key: string]: unknown;
}

export interface ToolDefinition {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean };
}

export type ToolChoice = 'none' | 'auto' | 'required' | { type: 'function'; function: { name: string } };

/** An OpenAI chat-completions request body. Unknown fields are kept and passed through. */
export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  stream?: boolean;
  stream_options?: { include_usage?: boolean } | null;
  max_tokens?: number | null;
  max_completion_tokens?: number | null;
  n?: number | null;
  stop?: string | string[] | null;
  temperature?: number | null;
  top_p?: number | null;
  seed?: number | null;
  tools?: ToolDefinition[];
  tool_choice?: ToolChoice;
  response_format?: { type: 'text' | 'json_object' | 'json_schema'; json_schema?: Record<string, unknown> };
  user?: string;
  /** Tollgate's (as OpenRouter's): models to fall back to, in order, when the requested one fails. Never sent upstream. */
  models?: string[];
  /** Tollgate's: how long the upstreams may take to start answering, over all attempts. Never sent upstream. */
  timeout_ms?: number;
  [key: string]: unknown;
}

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'content_filter' | 'function_call';

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  [key: string]: unknown;
}

export interface ChatCompletion {
  id: string;
  object: 'chat.completion';
  created: number;
  model: string;
  choices: Array<{
    index: number;
    message: { role: 'assistant'; content: string | null; tool_calls?: ToolCall[]; refusal?: string | null; [key: string]: unknown };
    finish_reason: FinishReason | null;
    logprobs?: unknown;
  }>;
  usage?: Usage;
  system_fingerprint?: string | null;
  [key: string]: unknown;
}

export interface ChunkToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function?: { name?: string; arguments?: string };
}

export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: Array<{
    index: number;
    delta: { role?: 'assistant'; content?: string | null; tool_calls?: ChunkToolCallDelta[]; [key: string]: unknown };
    finish_reason: FinishReason | null;
    logprobs?: unknown;
  }>;
  usage?: Usage | null;
  [key: string]: unknown;
}

/**
 * Upstream connections per provider and process. LLM streams hold a connection for their whole answer (seconds
 * to minutes), so this bounds the concurrent requests to one provider: beyond it requests wait in the pool's
 * queue. 1,024 covers the 1,000 concurrent streams the performance targets name.
 */
export const UPSTREAM_CONNECTIONS = 1_024;

/** What the gateway hands an adapter: the client's body with `model` already set to the upstream model name. */
export interface ProviderCall {
  body: ChatRequest;
  /** Aborted when the client goes away or the request times out. */
  signal: AbortSignal;
  requestId: string;
  /** Milliseconds the upstream may take to start answering. */
  timeoutMs: number;
  /** Completion bound for providers that require one (Anthropic) when the request sets none: the model's max_tokens. */
  defaultMaxTokens?: number;
}

export interface Provider {
  /** Provider id as in the catalog: `openai`, `groq`, `sandbox`, ... */
  readonly id: string;
  complete(call: ProviderCall): Promise<ChatCompletion>;
  /** Yields chunks as the upstream sends them; a final chunk may carry `usage` with empty `choices`. */
  stream(call: ProviderCall): AsyncIterable<ChatCompletionChunk>;
  /** A cheap health check that spends no tokens (listing models); resolves when the provider answers 2xx. */
  probe?(signal: AbortSignal): Promise<void>;
  /**
   * The upstream can open a stream and fail right after (Anthropic's message_start, then an overloaded_error
   * event): routing holds the empty opening chunks back briefly so such a failure is still retried. Providers
   * without it have their first chunk forwarded at once.
   */
  readonly failsAfterOpening?: boolean;
}

/**
 * Thrown by adapters for any failure of the upstream. `status` is the upstream's HTTP status when it answered;
 * the gateway maps it to the contract's errors (and routing decides whether to retry).
 */
export class UpstreamError extends Error {
  readonly provider: string;
  readonly status: number | undefined;
  readonly kind: 'http' | 'connection' | 'timeout' | 'protocol';
  /** The upstream's `param`, when its error body names one. */
  readonly param: string | null;

  constructor(
    provider: string,
    kind: UpstreamError['kind'],
    message: string,
    options: { status?: number; param?: string | null; cause?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = 'UpstreamError';
    this.provider = provider;
    this.kind = kind;
    this.status = options.status;
    this.param = options.param ?? null;
  }
}

/** A JSON object (not null, not an array): what an answer's fields must be before an adapter reads into them. */
export function isObject(value: unknown): value is Record<string, any> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
