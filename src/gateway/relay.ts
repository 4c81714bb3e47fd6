/** Relays a chat-completions stream (`openai-stream.ts`): its text is the content and tool calls of its deltas. */
import type { ChatCompletionChunk } from '../providers/index.js';
import type { StreamStart } from '../routing/index.js';
import type { ChatContext } from './deps.js';
import { relayOpenAiStream } from './openai-stream.js';
import type { StreamMeter } from './stream-meter.js';

export function relayStream(
  context: ChatContext,
  start: StreamStart,
  signal: AbortSignal,
): AsyncGenerator<string, void, undefined> {
  return relayOpenAiStream(context, start, signal, {
    object: 'chat.completion.chunk',
    fallbackId: `chatcmpl-${context.requestId}`,
    includeUsage: context.body.stream_options?.include_usage === true,
    deliver: deliverChat,
    deliveredTokens: (meter) => meter.tokens(),
  });
}

/** Content is an llm.streaming.chunk; a tool call's name and arguments are only counted. */
function deliverChat(meter: StreamMeter, chunk: ChatCompletionChunk): void {
  for (const { delta } of chunk.choices) {
    if (typeof delta.content === 'string') meter.deliver(delta.content);
    for (const call of delta.tool_calls ?? [])
      meter.deliver((call.function?.name ?? '') + (call.function?.arguments ?? ''), { chunk: false });
  }
}
