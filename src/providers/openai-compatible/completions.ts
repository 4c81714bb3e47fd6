/**
 * `POST {base}/completions` on an OpenAI-compatible server (vLLM, Ollama, Together, ...): the client's body passed
 * through, answers and stream chunks checked to carry text choices and returned unchanged.
 */
import type { UpstreamTextCompletion, TextCompletionCall } from '../completions.js';
import { inBandError } from '../errors.js';
import type { HttpClient } from '../http-client.js';
import { UpstreamError } from '../provider.js';
import type { SseEvent } from '../sse.js';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { ReadableUpstreamTextCompletionSchema, isObject } from '../../wire/index.js';
import { eventJson, openAiStream } from './stream-event.js';

export async function completeTextOpenAI(
  http: HttpClient,
  path: string,
  call: TextCompletionCall,
): Promise<UpstreamTextCompletion> {
  const { id } = http;
  const json = await http.json(call, path, { ...call.body, stream: false, stream_options: undefined });
  if (isObject(json) && 'error' in json) throw inBandError(id, json);
  if (isObject(json)) numberChoices(json.choices);
  if (!isTextCompletion(json))
    throw new UpstreamError(id, 'protocol', `${id} answered with JSON that is not a text completion`);
  return json;
}

export function streamTextOpenAI(
  http: HttpClient,
  path: string,
  call: TextCompletionCall,
): AsyncGenerator<UpstreamTextCompletion> {
  return openAiStream(http, path, call, call.body, parseTextEvent);
}

/** One event of a text-completion stream: the chunk, `'done'` for `[DONE]`, `'skip'` for an empty event. */
function parseTextEvent(provider: string, event: SseEvent): UpstreamTextCompletion | 'done' | 'skip' {
  const json = eventJson(provider, event);
  if (typeof json === 'string') return json;
  // Some servers leave `text` out of the finishing choice.
  for (const choice of json.choices) if (isObject(choice) && choice.text == null) choice.text = '';
  numberChoices(json.choices);
  if (!isTextCompletion(json))
    throw new UpstreamError(provider, 'protocol', `${provider} sent a stream chunk whose choices are not text`);
  return json;
}

/** Choices without an `index` get their position (a server that answers one choice may leave it out). */
function numberChoices(choices: unknown): void {
  if (!Array.isArray(choices)) return;
  for (const [position, choice] of choices.entries())
    if (isObject(choice) && choice.index === undefined) choice.index = position;
}

const TextCompletionCheck = TypeCompiler.Compile(ReadableUpstreamTextCompletionSchema);

/** An answer the gateway can meter and relay: choices with text (ReadableUpstreamTextCompletionSchema); the rest passes through unchecked. */
function isTextCompletion(json: unknown): json is UpstreamTextCompletion {
  return TextCompletionCheck.Check(json);
}
