import { inBandError } from '../errors.js';
import { UpstreamError } from '../provider.js';
import type { SseEvent } from '../sse.js';
import { isObject } from '../translate.js';
import type { ChatCompletionChunk } from '../types.js';

/**
 * Reads one event of an OpenAI-compatible chat stream: the chunk, `'done'` for `[DONE]`, `'skip'` for an empty
 * event. Throws UpstreamError for in-band errors (`http`) and for data that is not a chunk (`protocol`).
 */
export function parseStreamEvent(provider: string, event: SseEvent): ChatCompletionChunk | 'done' | 'skip' {
  const data = event.data.trim();
  if (data === '[DONE]') return 'done';
  if (data === '') return 'skip';
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch (cause) {
    throw new UpstreamError(provider, 'protocol', `${provider} sent a malformed stream event: ${data.slice(0, 200)}`, {
      cause,
    });
  }
  if (!isObject(json))
    throw new UpstreamError(provider, 'protocol', `${provider} sent a stream event that is not an object`);
  if (json.error !== undefined || event.event === 'error') throw inBandError(provider, json);
  // Some servers leave `choices` out of the final usage chunk.
  if (json.choices === undefined) json.choices = [];
  if (!Array.isArray(json.choices)) {
    throw new UpstreamError(provider, 'protocol', `${provider} sent a stream chunk without a choices array`);
  }
  const choices: unknown[] = json.choices;
  for (const choice of choices) {
    // Some servers leave `delta` out of the finishing chunk.
    if (
      typeof choice === 'object' &&
      choice !== null &&
      (!('delta' in choice) || choice.delta === undefined || choice.delta === null)
    )
      Object.assign(choice, { delta: {} });
  }
  if (!isChunk(json))
    throw new UpstreamError(provider, 'protocol', `${provider} sent a stream chunk whose choices are not deltas`);
  return json;
}

/** A chunk the relay can read: its choices are deltas; the rest passes through unchecked. */
function isChunk(json: Record<string, unknown>): json is ChatCompletionChunk {
  return Array.isArray(json.choices) && json.choices.every(isDeltaChoice);
}

/** A choice of a stream chunk the relay can read: a `delta` object, and tool calls (if any) that are a list of objects. */
function isDeltaChoice(choice: unknown): boolean {
  if (typeof choice !== 'object' || choice === null || !('delta' in choice)) return false;
  const { delta } = choice;
  if (typeof delta !== 'object' || delta === null) return false;
  const calls = 'tool_calls' in delta ? delta.tool_calls : undefined;
  return (
    calls === undefined ||
    calls === null ||
    (Array.isArray(calls) && calls.every((call) => typeof call === 'object' && call !== null))
  );
}
