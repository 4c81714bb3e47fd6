/** The start of a streamed answer: the point after which routing never retries a stream. */
import type { UpstreamChunk, ProviderCall } from '../providers/index.js';
import type { Deployment } from './health.js';

export interface StreamStart {
  first: IteratorResult<UpstreamChunk>;
  chunks: AsyncIterator<UpstreamChunk>;
}

/** How long a stream's opening chunks may be held back waiting for its first chunk with substance. */
const PREAMBLE_HOLD_MS = 2_000;

/**
 * Opens a stream and reads it up to its first chunk with substance (text, a tool call, a finish reason or usage),
 * for at most PREAMBLE_HOLD_MS. Chunks before it (the role-only opener that Anthropic's message_start becomes)
 * are held back and replayed, so an upstream that fails right after opening (an `overloaded_error` event) is
 * still retried: nothing has reached the client. A slow start (a model thinking) is committed after the hold.
 * Only for providers that declare `failsAfterOpening`; others have their first chunk forwarded on arrival.
 */
export async function openStream(deployment: Pick<Deployment, 'provider'>, call: ProviderCall): Promise<StreamStart> {
  const upstream = deployment.provider.stream(call)[Symbol.asyncIterator]();
  let next = await upstream.next();
  if (!deployment.provider.failsAfterOpening || next.done || !isPreamble(next.value))
    return { first: next, chunks: upstream };
  const held: UpstreamChunk[] = [];
  let pending: Promise<IteratorResult<UpstreamChunk>> | undefined;
  const until = Date.now() + PREAMBLE_HOLD_MS;
  let timer: NodeJS.Timeout | undefined;
  try {
    while (!next.done && isPreamble(next.value)) {
      held.push(next.value);
      const read = upstream.next();
      const late = new Promise<'late'>(
        (resolve) => (timer = setTimeout(resolve, Math.max(0, until - Date.now()), 'late')),
      );
      const raced = await Promise.race([read, late]);
      clearTimeout(timer);
      if (raced === 'late') {
        pending = read;
        read.catch(() => undefined); // it is awaited by the relay, or dropped when the client goes away
        break;
      }
      next = raced;
    }
  } finally {
    clearTimeout(timer);
  }
  if (!pending) pending = Promise.resolve(next);
  const first: IteratorResult<UpstreamChunk> = { done: false, value: held.shift()! };
  const chunks: AsyncIterator<UpstreamChunk> = {
    next: () => {
      const replay = held.shift();
      if (replay) return Promise.resolve({ done: false, value: replay });
      if (pending) {
        const result = pending;
        pending = undefined;
        return result;
      }
      return upstream.next();
    },
    return: async (value?: unknown) => (await upstream.return?.(value)) ?? { done: true, value: undefined },
  };
  return { first, chunks };
}

/**
 * A chunk that carries nothing of the answer yet: no text, no tool call, no finish reason, and no closing usage (an
 * opener may carry the prompt's usage: Anthropic's message_start does).
 */
function isPreamble(chunk: UpstreamChunk): boolean {
  if (chunk.usage && chunk.choices.length === 0) return false;
  return chunk.choices.every(
    (choice) =>
      !choice.delta.content && !choice.delta.tool_calls?.length && !choice.finish_reason && !choice.delta.refusal,
  );
}
