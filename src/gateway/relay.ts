/** Relays a chat-completions stream (`openai-stream.ts`): its text is the content and tool calls of its deltas. */
import type { StreamStart } from '../routing/index.js';
import type { UpstreamChunk } from '../wire/index.js';
import type { RequestContext } from './deps.js';
import { relayOpenAiStream, type OpenAiStreamEvent } from './openai-stream.js';
import type { StreamMeter } from './stream-meter.js';

export type ChatStreamEvent = OpenAiStreamEvent<UpstreamChunk>;

export function relayChatStream(
  context: RequestContext,
  start: StreamStart,
  signal: AbortSignal,
  includeUsage: boolean,
): AsyncGenerator<ChatStreamEvent, void, undefined> {
  return relayOpenAiStream(context, start, signal, {
    fallbackId: `chatcmpl-${context.requestId}`,
    includeUsage,
    usageChunk: (head, usage) => ({ ...head, object: 'chat.completion.chunk', choices: [], usage }),
    deliver: deliverChat,
    deliveredTokens: (meter) => meter.tokens(),
  });
}

/** Content is an llm.streaming.chunk; a tool call's name and arguments are only counted. */
function deliverChat(meter: StreamMeter, chunk: UpstreamChunk): void {
  for (const { delta } of chunk.choices) {
    if (typeof delta.content === 'string') meter.deliver(delta.content);
    for (const call of delta.tool_calls ?? [])
      meter.deliver((call.function?.name ?? '') + (call.function?.arguments ?? ''), { chunk: false });
  }
}
