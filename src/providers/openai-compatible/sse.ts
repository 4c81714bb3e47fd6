import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { MAX_ANSWER_BYTES, tooLarge } from '../body.js';
import { UpstreamError, type ChatCompletionChunk } from '../types.js';
import { inBandError } from './errors.js';

/**
 * Yields server-sent events as soon as their bytes arrive; comments and partial trailing events are dropped.
 * More than MAX_ANSWER_BYTES without a complete event is an UpstreamError (the parser would buffer it all).
 */
export async function* sseEvents(source: AsyncIterable<Uint8Array | string>, provider = 'upstream'): AsyncGenerator<EventSourceMessage> {
  const pending: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (event) => pending.push(event) });
  const decoder = new TextDecoder();
  let unparsed = 0;
  for await (const bytes of source) {
    unparsed += bytes.length;
    parser.feed(typeof bytes === 'string' ? bytes : decoder.decode(bytes, { stream: true }));
    if (pending.length > 0) unparsed = 0;
    else if (unparsed > MAX_ANSWER_BYTES) throw tooLarge(provider);
    yield* pending.splice(0);
  }
}

/**
 * Reads one event of an OpenAI-compatible chat stream: the chunk, `'done'` for `[DONE]`, `'skip'` for an empty
 * event. Throws UpstreamError for in-band errors (`http`) and for data that is not a chunk (`protocol`).
 */
export function parseStreamEvent(provider: string, event: EventSourceMessage): ChatCompletionChunk | 'done' | 'skip' {
  const data = event.data.trim();
  if (data === '[DONE]') return 'done';
  if (data === '') return 'skip';
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch (cause) {
    throw new UpstreamError(provider, 'protocol', `${provider} sent a malformed stream event: ${data.slice(0, 200)}`, { cause });
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new UpstreamError(provider, 'protocol', `${provider} sent a stream event that is not an object`);
  }
  const chunk = json as Record<string, unknown>;
  if (chunk.error !== undefined || event.event === 'error') throw inBandError(provider, chunk);
  // Some servers leave `choices` out of the final usage chunk.
  if (chunk.choices === undefined) chunk.choices = [];
  if (!Array.isArray(chunk.choices)) {
    throw new UpstreamError(provider, 'protocol', `${provider} sent a stream chunk without a choices array`);
  }
  for (const choice of chunk.choices as unknown[]) {
    // Some servers leave `delta` out of the finishing chunk.
    if (typeof choice === 'object' && choice !== null) (choice as { delta?: unknown }).delta ??= {};
    if (!isDeltaChoice(choice)) throw new UpstreamError(provider, 'protocol', `${provider} sent a stream chunk whose choices are not deltas`);
  }
  return chunk as ChatCompletionChunk;
}

/** A choice of a stream chunk the relay can read: a `delta` object, and tool calls (if any) that are a list of objects. */
function isDeltaChoice(choice: unknown): boolean {
  const delta = (choice as { delta?: unknown } | null)?.delta;
  if (typeof delta !== 'object' || delta === null) return false;
  const calls = (delta as { tool_calls?: unknown }).tool_calls;
  return calls === undefined || calls === null || (Array.isArray(calls) && calls.every((call) => typeof call === 'object' && call !== null));
}

