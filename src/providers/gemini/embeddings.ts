/**
 * Embeddings on Gemini: `POST {base}/models/{model}:batchEmbedContents`, one request per input, `dimensions` as
 * `outputDimensionality`. Gemini reports no token usage for embeddings; the gateway counts.
 */
import { embeddingInputs, isVector, type EmbeddingCall, type UpstreamEmbeddings } from '../embeddings.js';
import type { HttpClient } from '../http-client.js';
import { UpstreamError } from '../provider.js';
import { unsupported } from '../translate.js';
import { isObject } from '../../wire/index.js';

export async function embedGemini(
  http: HttpClient,
  modelPath: string,
  call: EmbeddingCall,
): Promise<UpstreamEmbeddings> {
  const { id } = http;
  const { model, dimensions } = call.body;
  const requests = embeddingInputs(call.body.input).map((input) => {
    if (typeof input !== 'string') throw unsupported(id, `${id} takes texts to embed, not token arrays`, 'input');
    return {
      model: model.includes('/') ? model : `models/${model}`,
      content: { parts: [{ text: input }] },
      ...(dimensions ? { outputDimensionality: dimensions } : {}),
    };
  });
  const json = await http.json(call, `${modelPath}:batchEmbedContents`, { requests });
  const embeddings = isObject(json) ? json.embeddings : undefined;
  if (!Array.isArray(embeddings) || embeddings.length !== requests.length)
    throw new UpstreamError(id, 'protocol', `${id} answered with JSON that is not ${requests.length} embeddings`);
  const vectors = embeddings.map((embedding) => {
    const values = isObject(embedding) ? embedding.values : undefined;
    if (!isVector(values))
      throw new UpstreamError(id, 'protocol', `${id} answered with an embedding that is not a list of numbers`);
    return values;
  });
  return { vectors, promptTokens: undefined };
}
