/** The embeddings side of the adapter contract: the call an adapter's `embed` gets and what it returns. */
import type { EmbeddingRequest } from '../wire/index.js';

/** One input to embed: a text, or a token array (OpenAI's tokens, which only OpenAI-compatible servers take). */
export type EmbeddingInput = string | number[];

export interface EmbeddingCall {
  /** The client's body with `model` set to the upstream model name, without `encoding_format`. */
  body: EmbeddingRequest;
  /** Aborted when the client goes away or the request times out. */
  signal: AbortSignal;
  requestId: string;
  /** Milliseconds the upstream may take to answer. */
  timeoutMs: number;
}

export interface UpstreamEmbeddings {
  /** One vector per input, in the order of the inputs. */
  vectors: number[][];
  /** Input tokens by the upstream's count, when it reports one. */
  promptTokens: number | undefined;
}

/** The request's `input`, listed: a lone text or token array becomes a list of one. */
export function embeddingInputs(input: EmbeddingRequest['input']): EmbeddingInput[] {
  if (typeof input === 'string') return [input];
  if (input.length > 0 && input.every((item): item is number => typeof item === 'number')) return [input];
  return input.filter((item): item is string | number[] => typeof item !== 'number');
}

/** A vector the way an upstream must answer it: finite numbers, at least one. */
export function isVector(value: unknown): value is number[] {
  return Array.isArray(value) && value.length > 0 && value.every((n) => typeof n === 'number' && Number.isFinite(n));
}
