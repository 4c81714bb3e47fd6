/** `POST {base}/embeddings` on an OpenAI-compatible server: floats asked for, the list checked and put in order. */
import { inBandError } from '../errors.js';
import type { HttpClient } from '../http-client.js';
import { UpstreamError } from '../provider.js';
import { embeddingInputs, isVector, type EmbeddingCall, type UpstreamEmbeddings } from '../embeddings.js';
import { isObject } from '../../wire/index.js';

export async function embedOpenAI(http: HttpClient, path: string, call: EmbeddingCall): Promise<UpstreamEmbeddings> {
  const { id } = http;
  // Floats whatever the client asked: the gateway encodes base64 itself, and not every server can.
  const json = await http.json(call, path, { ...call.body, encoding_format: 'float' });
  if (isObject(json) && 'error' in json) throw inBandError(id, json);
  const expected = embeddingInputs(call.body.input).length;
  if (!isObject(json) || !Array.isArray(json.data) || json.data.length !== expected)
    throw new UpstreamError(id, 'protocol', `${id} answered with JSON that is not a list of ${expected} embeddings`);
  const vectors = new Array<number[]>(expected);
  for (const [position, item] of json.data.entries()) {
    const index = isObject(item) && typeof item.index === 'number' ? item.index : position;
    const embedding = isObject(item) ? item.embedding : undefined;
    if (!isVector(embedding) || !Number.isInteger(index) || index < 0 || index >= expected || vectors[index])
      throw new UpstreamError(id, 'protocol', `${id} answered with an embedding that is not a list of numbers`);
    vectors[index] = embedding;
  }
  const usage = isObject(json.usage) ? json.usage.prompt_tokens : undefined;
  return { vectors, promptTokens: typeof usage === 'number' ? usage : undefined };
}
