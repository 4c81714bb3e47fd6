/**
 * The contract between the gateway and an adapter: the call it gets, what it returns, and the one error type it
 * throws for any upstream failure.
 */
import type { UpstreamTextCompletion, TextCompletionCall } from './completions.js';
import type { EmbeddingCall, UpstreamEmbeddings } from './embeddings.js';
import type { UpstreamAnthropicMessage, UpstreamResponse, UpstreamResponseEvent } from '../wire/index.js';
import type { MessagesCall, MessagesEvent } from './messages.js';
import type { ResponsesCall } from './responses.js';
import type { UpstreamCompletion, UpstreamChunk, ChatRequest } from './types.js';

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
  /** Provider id from the catalog: `openai`, `groq`, `sandbox`, ... */
  readonly id: string;
  complete(call: ProviderCall): Promise<UpstreamCompletion>;
  /** Yields chunks while the upstream sends them; a final chunk may carry `usage` with empty `choices`. */
  stream(call: ProviderCall): AsyncIterable<UpstreamChunk>;
  /** Embeddings, for providers that make them; a model's deployments must all have it for `embeddings: true`. */
  embed?(call: EmbeddingCall): Promise<UpstreamEmbeddings>;
  /** Legacy text completions (`POST /v1/completions`), for providers that serve them natively; both or neither. */
  completeText?(call: TextCompletionCall): Promise<UpstreamTextCompletion>;
  /** Yields `text_completion` chunks while the upstream sends them; a final chunk may carry `usage`. */
  streamText?(call: TextCompletionCall): AsyncIterable<UpstreamTextCompletion>;
  /** OpenAI's Responses API served natively (OpenAI itself); both or neither. Others are translated through chat. */
  respond?(call: ResponsesCall): Promise<UpstreamResponse>;
  /** Yields the Responses stream's events as the upstream sends them, up to the one that ends it. */
  streamResponse?(call: ResponsesCall): AsyncIterable<UpstreamResponseEvent>;
  /** Anthropic's Messages API served natively (Anthropic itself); both or neither. Others are translated through chat. */
  createMessage?(call: MessagesCall): Promise<UpstreamAnthropicMessage>;
  /** Yields the Messages stream's events as the upstream sends them, up to message_stop; an `error` event throws. */
  streamMessage?(call: MessagesCall): AsyncIterable<MessagesEvent>;
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
