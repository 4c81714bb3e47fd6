/**
 * Anthropic's Messages API spoken natively: the client's Messages body goes to `POST {base}/messages` as it is,
 * and the message or the stream's events come back as Anthropic sent them, checked against the wire contract's
 * `UpstreamAnthropic*` schemas only as far as metering reads them.
 */
import type { HttpClient } from '../http-client.js';
import type { MessagesCall, MessagesEvent } from '../messages.js';
import { UpstreamError } from '../provider.js';
import { eventDataJson } from '../sse.js';
import { isObject, type UpstreamAnthropicMessage } from '../../wire/index.js';
import { anthropicError, isReadableEvent, isReadableMessage } from './response.js';

export async function createMessageAnthropic(
  http: HttpClient,
  id: string,
  call: MessagesCall,
): Promise<UpstreamAnthropicMessage> {
  const { stream: _stream, ...body } = call.body;
  const json = await http.json(call, '/messages', body);
  if (isObject(json) && json.type === 'error') throw anthropicError(id, json);
  if (!isReadableMessage(json))
    throw new UpstreamError(id, 'protocol', `${id} answered with JSON that is not a message`);
  return json;
}

export async function* streamMessageAnthropic(
  http: HttpClient,
  id: string,
  call: MessagesCall,
): AsyncGenerator<MessagesEvent> {
  const res = await http.openStream(call, '/messages', { ...call.body, stream: true });
  let finished = false;
  let ended = false;
  for await (const { event, data } of http.events(
    res,
    call.signal,
    () => finished,
    () => ended,
  )) {
    const json = eventDataJson(id, data);
    if (!isObject(json)) throw new UpstreamError(id, 'protocol', `${id} sent a stream event that is not an object`);
    const type = typeof json.type === 'string' ? json.type : (event ?? '');
    if (type === 'error') throw anthropicError(id, json);
    if (!isReadableEvent(type, json))
      throw new UpstreamError(id, 'protocol', `${id} sent a stream event tollgate cannot read: ${data.slice(0, 200)}`);
    if (type === 'message_delta' && isObject(json.delta) && json.delta.stop_reason != null) finished = true;
    yield { event: type, data: json };
    if (type === 'message_stop') {
      ended = true;
      return;
    }
  }
  if (!finished) throw new UpstreamError(id, 'protocol', `${id} stream ended early`);
}
