/**
 * The text-completions side of the adapter contract (`POST /v1/completions`): the call an adapter's `completeText`
 * and `streamText` get and what they return.
 */
import { countTextTokens } from '../tokens/index.js';
import type { CompletionRequest, UpstreamTextCompletion } from '../wire/index.js';

export type { UpstreamTextCompletion };

export interface TextCompletionCall {
  /** The client's body with `model` set to the upstream model name and `max_tokens` always set. */
  body: CompletionRequest;
  /** Aborted when the client goes away or the request times out. */
  signal: AbortSignal;
  requestId: string;
  /** Milliseconds the upstream may take to start answering. */
  timeoutMs: number;
}

/** One prompt: a text, or a token array (OpenAI's tokens, which only OpenAI-compatible servers take). */
export type CompletionPrompt = string | number[];

/** The request's `prompt`, listed: a lone text or token array becomes a list of one. */
export function completionPrompts(prompt: CompletionRequest['prompt']): CompletionPrompt[] {
  if (typeof prompt === 'string') return [prompt];
  if (prompt.length > 0 && prompt.every((item): item is number => typeof item === 'number')) return [prompt];
  return prompt.filter((item): item is string | number[] => typeof item !== 'number');
}

/** A prompt's tokens by tollgate's count: a text's o200k tokens, a token array's length. */
export function promptTokensOf(prompt: CompletionPrompt): number {
  return typeof prompt === 'string' ? countTextTokens(prompt) : prompt.length;
}
