/**
 * The OpenAI-compatible adapter: chat requests passed through to `POST {base}/chat/completions` (OpenAI, Mistral,
 * Groq, local servers, ...), answers and stream chunks checked and returned unchanged.
 */
import { KNOWN_PROVIDERS } from '../../config/index.js';
import { isObject } from '../../wire/index.js';
import { isUpstreamCompletion } from '../checks.js';
import { inBandError } from '../errors.js';
import { HttpClient } from '../http-client.js';
import { UpstreamError, type Provider, type ProviderCall } from '../provider.js';
import type { ResponsesCall } from '../responses.js';
import type { UpstreamCompletion, UpstreamChunk } from '../types.js';
import { completeTextOpenAI, streamTextOpenAI } from './completions.js';
import { embedOpenAI } from './embeddings.js';
import { respondOpenAI, streamResponseOpenAI } from './responses.js';
import { openAiStream, parseStreamEvent } from './stream-event.js';

export interface OpenAICompatibleOptions {
  id: string;
  /** e.g. `https://api.openai.com/v1`; requests go to `${baseUrl}/chat/completions` (its query string kept). */
  baseUrl: string;
  apiKey?: string;
  headers?: Record<string, string>;
  /** Maximum sockets to the upstream (default UPSTREAM_CONNECTIONS). */
  connections?: number;
}

export type OpenAICompatibleProvider = Provider & { close(): Promise<void> };

export function createOpenAICompatibleProvider(options: OpenAICompatibleOptions): OpenAICompatibleProvider {
  const { id } = options;
  // Some servers take their version or deployment in a query parameter of the base URL (Azure's `api-version`).
  const { search } = new URL(options.baseUrl);
  const chatPath = `/chat/completions${search}`;
  const modelsPath = `/models${search}`;
  const embeddingsPath = `/embeddings${search}`;
  const responsesPath = `/responses${search}`;
  const completionsPath = `/completions${search}`;
  const headers: Record<string, string> = { ...options.headers, 'content-type': 'application/json' };
  if (options.apiKey) headers.authorization = `Bearer ${options.apiKey}`;
  const http = new HttpClient({ id, baseUrl: options.baseUrl, headers, connections: options.connections });

  async function complete(call: ProviderCall): Promise<UpstreamCompletion> {
    // One spread (an undefined field is left out of the JSON): object rest is a slow path on every request.
    const json = await http.json(call, chatPath, { ...call.body, stream: false, stream_options: undefined });
    if (isObject(json) && 'error' in json) throw inBandError(id, json);
    if (!isUpstreamCompletion(json))
      throw new UpstreamError(id, 'protocol', `${id} answered with JSON that is not a chat completion`);
    return json;
  }

  function stream(call: ProviderCall): AsyncGenerator<UpstreamChunk> {
    return openAiStream(http, chatPath, call, call.body, parseStreamEvent);
  }

  // Only OpenAI itself serves the Responses API; other servers get Responses requests translated through chat.
  const responses = KNOWN_PROVIDERS.some((known) => known.id === id && known.responses)
    ? {
        respond: (call: ResponsesCall) => respondOpenAI(http, responsesPath, call),
        streamResponse: (call: ResponsesCall) => streamResponseOpenAI(http, responsesPath, call),
      }
    : {};

  return {
    id,
    complete,
    stream,
    ...responses,
    embed: (call) => embedOpenAI(http, embeddingsPath, call),
    completeText: (call) => completeTextOpenAI(http, completionsPath, call),
    streamText: (call) => streamTextOpenAI(http, completionsPath, call),
    // GET /models answers 2xx when the server is up and the key is accepted.
    probe: (signal) => http.probe(modelsPath, signal, 10_000),
    close: () => http.close(),
  };
}
