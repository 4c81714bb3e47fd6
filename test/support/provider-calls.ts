/** What the adapter tests share: a provider call, collecting a stream, and catching an UpstreamError. */
import { expect } from 'vitest';
import { UpstreamError, type UpstreamChunk, type ChatRequest, type ProviderCall } from '../../src/providers/index.js';

/** A 1x1 PNG, base64. */
export const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==';

/** A call for `model` with one user message "Hi", `body` merged in. */
export const callFor =
  (model: string) =>
  (body: Partial<ChatRequest>, extra: Partial<ProviderCall> = {}): ProviderCall => ({
    body: { model, messages: [{ role: 'user', content: 'Hi' }], ...body },
    signal: new AbortController().signal,
    requestId: 'req_test',
    timeoutMs: 5_000,
    ...extra,
  });

export async function collect(iterable: AsyncIterable<UpstreamChunk>): Promise<UpstreamChunk[]> {
  const chunks: UpstreamChunk[] = [];
  for await (const chunk of iterable) chunks.push(chunk);
  return chunks;
}

export async function failure(promise: Promise<unknown>): Promise<UpstreamError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(UpstreamError);
  return err as UpstreamError;
}

export const text = (chunks: UpstreamChunk[]) => chunks.map((c) => c.choices[0]?.delta.content ?? '').join('');
