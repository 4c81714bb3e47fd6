import { inBandError } from '../errors.js';
import type { HttpClient, RequestCall } from '../http-client.js';
import { UpstreamError } from '../provider.js';
import { eventDataJson, type SseEvent } from '../sse.js';
import { isObject } from '../../wire/index.js';
import { isUpstreamChunk } from '../checks.js';
import type { UpstreamChunk } from '../types.js';

/**
 * POSTs `body` for a stream at `path` and yields its chunks as `parse` reads them, up to `[DONE]`; a stream that
 * ends before a chunk said why it stopped (or carried usage) is a `protocol` error. Usage is always asked for: the
 * gateway meters with it (and hides it from clients that did not ask).
 */
export async function* openAiStream<T extends StreamChunk>(
  http: HttpClient,
  path: string,
  call: RequestCall,
  body: { stream_options?: object | null | undefined },
  parse: (provider: string, event: SseEvent) => T | 'done' | 'skip',
): AsyncGenerator<T> {
  const { id } = http;
  const streamOptions = { ...body.stream_options, include_usage: true };
  const res = await http.openStream(call, path, { ...body, stream: true, stream_options: streamOptions });
  let finished = false;
  let ended = false;
  for await (const event of http.events(
    res,
    call.signal,
    () => finished,
    () => ended,
  )) {
    const chunk = parse(id, event);
    if (chunk === 'skip') continue;
    if (chunk === 'done') {
      ended = true;
      return;
    }
    if (chunk.usage || chunk.choices.some((choice) => choice.finish_reason)) finished = true;
    yield chunk;
  }
  if (!finished) throw new UpstreamError(id, 'protocol', `${id} stream ended early`);
}

/** What the reader needs of a chunk: its usage and its choices' finish reasons. */
interface StreamChunk {
  usage?: unknown;
  choices: ReadonlyArray<{ finish_reason?: unknown }>;
}

/**
 * One event's JSON object, `'done'` for `[DONE]`, `'skip'` for an empty event; `choices` is a list (some servers
 * leave it out of the final usage chunk). Throws UpstreamError for in-band errors (`http`) and for data that is
 * not such an object (`protocol`).
 */
export function eventJson(
  provider: string,
  event: SseEvent,
): (Record<string, unknown> & { choices: unknown[] }) | 'done' | 'skip' {
  const data = event.data.trim();
  if (data === '[DONE]') return 'done';
  if (data === '') return 'skip';
  const json = eventDataJson(provider, data);
  if (!isObject(json))
    throw new UpstreamError(provider, 'protocol', `${provider} sent a stream event that is not an object`);
  if (json.error !== undefined || event.event === 'error') throw inBandError(provider, json);
  json.choices ??= [];
  if (!hasChoices(json))
    throw new UpstreamError(provider, 'protocol', `${provider} sent a stream chunk without a choices array`);
  return json;
}

function hasChoices(json: Record<string, unknown>): json is Record<string, unknown> & { choices: unknown[] } {
  return Array.isArray(json.choices);
}

/**
 * Reads one event of an OpenAI-compatible chat stream: the chunk, `'done'` for `[DONE]`, `'skip'` for an empty
 * event. Throws UpstreamError for in-band errors (`http`) and for data that is not a chunk (`protocol`).
 */
export function parseStreamEvent(provider: string, event: SseEvent): UpstreamChunk | 'done' | 'skip' {
  const json = eventJson(provider, event);
  if (typeof json === 'string') return json;
  const choices: unknown[] = json.choices;
  // Some servers leave `delta` out of the finishing chunk.
  for (const choice of choices) if (isObject(choice) && choice.delta == null) choice.delta = {};
  if (!isUpstreamChunk(json))
    throw new UpstreamError(provider, 'protocol', `${provider} sent a stream chunk whose choices are not deltas`);
  return json;
}
