/**
 * The Google Gemini adapter: `POST {base}/models/{model}:generateContent` and `:streamGenerateContent?alt=sse`
 * with `x-goog-api-key`; answers and stream events translated into OpenAI's shapes on arrival.
 */
import { HttpClient } from '../http-client.js';
import { UpstreamError, type Provider, type ProviderCall } from '../provider.js';
import { isObject } from '../../wire/index.js';
import type { UpstreamCompletion, UpstreamChunk } from '../types.js';
import { embedGemini } from './embeddings.js';
import { toGeminiRequest } from './request.js';
import { StreamTranslator, fromGeminiResponse, geminiError } from './response.js';

export interface GeminiOptions {
  id: string;
  /** e.g. `https://generativelanguage.googleapis.com/v1beta`. */
  baseUrl: string;
  apiKey?: string;
  connections?: number;
}

export type GeminiProvider = Provider & { close(): Promise<void> };

/** `models/x` for a plain name; names that already carry a collection (`tunedModels/x`) are kept. */
const modelPath = (model: string) => (model.includes('/') ? `/${model}` : `/models/${encodeURIComponent(model)}`);

export function createGeminiProvider(options: GeminiOptions): GeminiProvider {
  const { id } = options;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (options.apiKey) headers['x-goog-api-key'] = options.apiKey;
  const mapError = (status: number, text: string): UpstreamError | undefined => {
    try {
      return geminiError(id, status, JSON.parse(text));
    } catch {
      return undefined;
    }
  };
  const http = new HttpClient({
    id,
    baseUrl: options.baseUrl,
    headers,
    mapError,
    ...(options.connections ? { connections: options.connections } : {}),
  });

  async function complete(call: ProviderCall): Promise<UpstreamCompletion> {
    const json = await http.json(call, `${modelPath(call.body.model)}:generateContent`, toGeminiRequest(id, call.body));
    if (isObject(json) && json.error !== undefined) throw geminiError(id, 502, json);
    return fromGeminiResponse(id, json, call.body.model);
  }

  async function* stream(call: ProviderCall): AsyncGenerator<UpstreamChunk> {
    const res = await http.openStream(
      call,
      `${modelPath(call.body.model)}:streamGenerateContent?alt=sse`,
      toGeminiRequest(id, call.body),
    );
    const translator = new StreamTranslator(id, call.body.model);
    for await (const event of http.events(res, call.signal, () => translator.finished)) {
      if (!event.data.trim()) continue;
      const chunk = translator.translate(event.data);
      if (chunk) yield chunk;
    }
    // Gemini's stream has no terminator: it is complete when a candidate said why it finished.
    if (!translator.finished) throw new UpstreamError(id, 'protocol', `${id} stream ended early`);
    const usage = translator.usageChunk();
    if (usage) yield usage;
  }

  return {
    id,
    complete,
    stream,
    embed: (call) => embedGemini(http, modelPath(call.body.model), call),
    probe: (signal) => http.probe('/models?pageSize=1', signal, 10_000),
    close: () => http.close(),
  };
}
