/**
 * Relays an upstream stream chunk by chunk in OpenAI SSE events. It meters what it delivers,
 * settles before the last event (the charge is durable before `[DONE]`), and when the client goes away it
 * settles for what was delivered.
 */
import { usdNumber, type Settlement } from '../billing/index.js';
import { errorEnvelope } from '../errors/index.js';
import type { Usage } from '../providers/index.js';
import { fromUpstream, type StreamStart } from '../routing/index.js';
import type { ChatContext } from './deps.js';
import { upstreamCount } from './settle.js';
import { StreamMeter } from './stream-meter.js';

export async function* relayStream(
  context: ChatContext,
  { first, chunks }: StreamStart,
  signal: AbortSignal,
): AsyncGenerator<string, void, undefined> {
  const includeUsage = context.body.stream_options?.include_usage === true;
  let upstreamUsage: Usage | undefined;
  let id = `chatcmpl-${context.requestId}`;
  let created = Math.floor(Date.now() / 1000);
  const meter = new StreamMeter(context, (!first.done && first.value.id) || id);

  try {
    try {
      for (let next = first; !next.done; next = await chunks.next()) {
        const chunk = next.value;
        id = chunk.id || id;
        created = chunk.created || created;
        if (chunk.usage !== undefined) {
          // Upstreams asked for usage put it (or `usage: null`) on chunks; clients that did not ask never see it.
          if (chunk.usage) {
            upstreamUsage = chunk.usage;
            if (chunk.choices.length === 0) continue;
          }
          if (!includeUsage) delete chunk.usage;
        }
        chunk.model = context.model.id;
        for (const { delta } of chunk.choices) {
          if (typeof delta.content === 'string') meter.deliver(delta.content);
          for (const call of delta.tool_calls ?? [])
            meter.deliver((call.function?.name ?? '') + (call.function?.arguments ?? ''), { chunk: false });
        }
        yield `data: ${JSON.stringify(chunk)}\n\n`;
      }
    } catch (error) {
      if (signal.aborted) return;
      // After the first byte an error is one event with the envelope, and no [DONE].
      const failure = fromUpstream(error);
      await meter.settle(context.promptTokens, meter.tokens(), failure);
      yield `data: ${JSON.stringify(errorEnvelope(failure))}\n\n`;
      return;
    }
    if (signal.aborted) return;

    let settlement: Settlement;
    try {
      const promptTokens = upstreamCount(upstreamUsage?.prompt_tokens) ?? context.promptTokens;
      const completionTokens = upstreamCount(upstreamUsage?.completion_tokens) ?? meter.tokens();
      settlement = await meter.settle(promptTokens, completionTokens);
    } catch (error) {
      yield `data: ${JSON.stringify(errorEnvelope(fromUpstream(error)))}\n\n`;
      return;
    }
    meter.end();
    if (includeUsage) {
      const { promptTokens, completionTokens, chargedNano } = settlement;
      const usage = {
        ...upstreamUsage,
        prompt_tokens: promptTokens,
        completion_tokens: completionTokens,
        total_tokens: promptTokens + completionTokens,
        cost: usdNumber(chargedNano),
      };
      const last = { id, object: 'chat.completion.chunk', created, model: context.model.id, choices: [], usage };
      yield `data: ${JSON.stringify(last)}\n\n`;
    }
    yield 'data: [DONE]\n\n';
  } finally {
    // The client went away (or a settle failed): charge what was delivered, close the upstream.
    if (!meter.settled) await meter.settle(context.promptTokens, meter.tokens()).catch(() => undefined);
    void chunks.return?.().catch(() => undefined);
  }
}
