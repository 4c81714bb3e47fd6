/**
 * The Anthropic adapter: OpenAI chat requests sent to `POST {base}/messages` (Messages API, `x-api-key`,
 * `anthropic-version`), answers and stream events translated back on arrival.
 */
import { HttpClient } from '../http-client.js';
import { UpstreamError, type Provider, type ProviderCall } from '../provider.js';
import { isObject } from '../../wire/index.js';
import type { UpstreamCompletion, UpstreamChunk } from '../types.js';
import { createMessageAnthropic, streamMessageAnthropic } from './messages.js';
import { toAnthropicRequest } from './request.js';
import { StreamTranslator, anthropicError, fromAnthropicMessage } from './response.js';

export const ANTHROPIC_VERSION = '2023-06-01';

export interface AnthropicOptions {
  id: string;
  /** e.g. `https://api.anthropic.com/v1`. */
  baseUrl: string;
  apiKey?: string;
  connections?: number;
}

export type AnthropicProvider = Provider & { close(): Promise<void> };

export function createAnthropicProvider(options: AnthropicOptions): AnthropicProvider {
  const { id } = options;
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'anthropic-version': ANTHROPIC_VERSION,
  };
  if (options.apiKey) headers['x-api-key'] = options.apiKey;
  const http = new HttpClient({
    id,
    baseUrl: options.baseUrl,
    headers,
    ...(options.connections ? { connections: options.connections } : {}),
  });

  async function complete(call: ProviderCall): Promise<UpstreamCompletion> {
    const { body, jsonTool } = toAnthropicRequest(id, call.body, false, call.defaultMaxTokens);
    const json = await http.json(call, '/messages', body);
    if (isObject(json) && json.type === 'error') throw anthropicError(id, json);
    return fromAnthropicMessage(id, json, jsonTool);
  }

  async function* stream(call: ProviderCall): AsyncGenerator<UpstreamChunk> {
    const { body, jsonTool } = toAnthropicRequest(id, call.body, true, call.defaultMaxTokens);
    const res = await http.openStream(call, '/messages', body);
    const translator = new StreamTranslator(id, jsonTool);
    for await (const event of http.events(res, call.signal, () => translator.finished)) {
      const chunk = translator.translate(event.event ?? '', event.data);
      if (chunk) yield chunk;
      if (translator.ended) return;
    }
    if (!translator.finished) throw new UpstreamError(id, 'protocol', `${id} stream ended early`);
    // The answer was complete (message_delta said why it stopped) but message_stop never came: usage is known.
    const usage = translator.usageChunk();
    if (usage) yield usage;
  }

  return {
    id,
    complete,
    stream,
    createMessage: (call) => createMessageAnthropic(http, id, call),
    streamMessage: (call) => streamMessageAnthropic(http, id, call),
    probe: (signal) => http.probe('/models?limit=1', signal, 10_000),
    failsAfterOpening: true,
    close: () => http.close(),
  };
}
