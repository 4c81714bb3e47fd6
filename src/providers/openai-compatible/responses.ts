/**
 * `POST {base}/responses` on OpenAI itself: the client's body passed through, the Response (or each stream event)
 * checked against the wire contract's `UpstreamResponse*` schemas and returned unchanged. An `error` event is an
 * in-band failure.
 */
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { inBandError } from '../errors.js';
import type { HttpClient } from '../http-client.js';
import { UpstreamError } from '../provider.js';
import { RESPONSE_END_EVENTS, type ResponsesCall } from '../responses.js';
import { eventDataJson, type SseEvent } from '../sse.js';
import {
  UpstreamResponseEventSchema,
  UpstreamResponseSchema,
  isObject,
  type UpstreamResponse,
  type UpstreamResponseEvent,
} from '../../wire/index.js';

const ResponseCheck = TypeCompiler.Compile(UpstreamResponseSchema);
const EventCheck = TypeCompiler.Compile(UpstreamResponseEventSchema);

export async function respondOpenAI(http: HttpClient, path: string, call: ResponsesCall): Promise<UpstreamResponse> {
  const { id } = http;
  const json = await http.json(call, path, { ...call.body, stream: false });
  if (isObject(json) && isObject(json.error) && !Array.isArray(json.output)) throw inBandError(id, json);
  if (!ResponseCheck.Check(json))
    throw new UpstreamError(id, 'protocol', `${id} answered with JSON that is not a Response`);
  return json;
}

export async function* streamResponseOpenAI(
  http: HttpClient,
  path: string,
  call: ResponsesCall,
): AsyncGenerator<UpstreamResponseEvent> {
  const { id } = http;
  const res = await http.openStream(call, path, { ...call.body, stream: true });
  let finished = false;
  for await (const event of http.events(
    res,
    call.signal,
    () => finished,
    () => finished,
  )) {
    const json = parseResponseEvent(id, event);
    if (json === undefined) continue;
    yield json;
    if (RESPONSE_END_EVENTS.has(json.type)) {
      finished = true;
      return;
    }
  }
  if (!finished) throw new UpstreamError(id, 'protocol', `${id} stream ended early`);
}

function parseResponseEvent(provider: string, event: SseEvent): UpstreamResponseEvent | undefined {
  const data = event.data.trim();
  if (data === '' || data === '[DONE]') return undefined;
  const json = eventDataJson(provider, data);
  if (!EventCheck.Check(json))
    throw new UpstreamError(provider, 'protocol', `${provider} sent a stream event without a type`);
  if (json.type === 'error' || event.event === 'error') throw inBandError(provider, json);
  return json;
}
