/**
 * Reading upstream bodies with a ceiling, so that an enormous answer cannot exhaust the process's memory: an
 * answer (a JSON body, or one server-sent event) may be at most MAX_ANSWER_BYTES; an error body is read up to
 * MAX_ERROR_BYTES and the rest dropped (only its message is kept).
 */
import type { Dispatcher } from 'undici';
import { UpstreamError } from './provider.js';

/** 16 MiB: about 30 times the longest answer a 128k-token model writes, with room for logprobs. */
export const MAX_ANSWER_BYTES = 16 * 1024 * 1024;
export const MAX_ERROR_BYTES = 64 * 1024;

export function tooLarge(provider: string): UpstreamError {
  return new UpstreamError(
    provider,
    'protocol',
    `${provider} sent an answer larger than ${MAX_ANSWER_BYTES / 1048576} MiB`,
  );
}

/** The body's text; UpstreamError `protocol` beyond MAX_ANSWER_BYTES (the rest is not read). */
export async function answerText(
  provider: string,
  res: Pick<Dispatcher.ResponseData, 'body' | 'headers'>,
): Promise<string> {
  const { body } = res;
  const declared = Number(res.headers['content-length'] ?? NaN);
  // A declared length within the cap: undici's own reader (which holds the server to that length) is cheaper
  // than iterating the stream, and this is every non-streaming answer's path.
  if (declared <= MAX_ANSWER_BYTES) return body.text();
  if (declared > MAX_ANSWER_BYTES) {
    body.on('error', () => {}).destroy();
    throw tooLarge(provider);
  }
  const parts: Buffer[] = [];
  let size = 0;
  for await (const part of body) {
    const chunk = bytesOf(part);
    size += chunk.length;
    if (size > MAX_ANSWER_BYTES) {
      body.on('error', () => {}).destroy();
      throw tooLarge(provider);
    }
    parts.push(chunk);
  }
  return Buffer.concat(parts).toString('utf8');
}

/** A part of a body: undici's body (no encoding set) yields Buffers; Readable streams type them `any`. */
function bytesOf(part: unknown): Buffer {
  return Buffer.isBuffer(part) ? part : Buffer.from(typeof part === 'string' ? part : '');
}

/** An error body's first MAX_ERROR_BYTES of text; the rest is discarded. */
export async function errorText(body: Dispatcher.ResponseData['body']): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const part of body) {
    const chunk = bytesOf(part);
    parts.push(chunk);
    size += chunk.length;
    if (size >= MAX_ERROR_BYTES) {
      body.on('error', () => {}).destroy();
      break;
    }
  }
  return Buffer.concat(parts).toString('utf8').slice(0, MAX_ERROR_BYTES);
}
