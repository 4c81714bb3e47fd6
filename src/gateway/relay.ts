/**
 * Relays an upstream stream chunk by chunk in OpenAI SSE events. It meters what it delivers,
 * settles before the last event (the charge is durable before `[DONE]`), and when the client goes away it
 * settles for what was delivered.
 */
import { usdNumber, type Settlement } from '../billing/index.js';
import { errorEnvelope, type GatewayError } from '../errors/index.js';
import { llmEvent } from '../events/index.js';
import { MAX_ANSWER_BYTES, tooLarge, type Usage } from '../providers/index.js';
import { fromUpstream, type StreamStart } from '../routing/index.js';
import { countTextTokens } from '../tokens/index.js';
import type { ChatContext } from './deps.js';
import { requestData } from './events.js';
import { finish } from './record.js';
import { settleOrFail, upstreamCount } from './settle.js';

export async function* relayStream(
  context: ChatContext,
  { first, chunks }: StreamStart,
  signal: AbortSignal,
): AsyncGenerator<string, void, undefined> {
  const includeUsage = context.body.stream_options?.include_usage === true;
  const delivered: string[] = [];
  let deliveredChars = 0;
  let upstreamUsage: Usage | undefined;
  let id = `chatcmpl-${context.requestId}`;
  let created = Math.floor(Date.now() / 1000);
  let firstTokenAt = 0;
  let settled = false;
  // llm.streaming.* for the account's webhooks: one check per stream, nothing built when nobody listens.
  const { events } = context.deps;
  const { account, key } = context.reservation;
  const streamId = (!first.done && first.value.id) || id;
  const chunkEvents = events?.wants('llm.streaming.chunk', account.id) === true;
  let totalChunks = 0;
  if (events?.wants('llm.streaming.start', account.id)) {
    events.emit(llmEvent('llm.streaming.start', account.id, key.id, { ...requestData(context), streamId }));
  }

  const settle = async (promptTokens: number, completionTokens: number, failed?: GatewayError) => {
    settled = true;
    const error = failed && { code: failed.code, message: failed.message };
    const settlement = await settleOrFail(
      context,
      promptTokens,
      completionTokens,
      error ? { error } : { text: () => delivered.join('') },
    );
    const generationMs = firstTokenAt ? performance.now() - firstTokenAt : 0;
    const failure = failed ? { status: failed.status, error } : {};
    const billed = {
      promptTokens: settlement.promptTokens,
      completionTokens: settlement.completionTokens,
      chargedNano: settlement.chargedNano,
    };
    finish(context, { ok: !failed, ...failure, ...billed, generationMs });
    return settlement;
  };
  const deliveredTokens = () => countTextTokens(delivered.join(''));

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
        // An endless answer would grow `delivered` without bound: past MAX_ANSWER_BYTES of text it is cut here.
        for (const { delta } of chunk.choices)
          deliveredChars +=
            (delta.content?.length ?? 0) + (delta.tool_calls ? JSON.stringify(delta.tool_calls).length : 0);
        if (deliveredChars > MAX_ANSWER_BYTES) throw tooLarge(context.providerId);
        for (const choice of chunk.choices) {
          if (typeof choice.delta.content === 'string' && choice.delta.content) {
            delivered.push(choice.delta.content);
            if (chunkEvents) {
              events!.emit(
                llmEvent('llm.streaming.chunk', account.id, key.id, {
                  requestId: context.requestId,
                  streamId,
                  chunkIndex: totalChunks,
                  content: choice.delta.content,
                }),
              );
            }
            totalChunks++;
          }
          for (const call of choice.delta.tool_calls ?? [])
            delivered.push((call.function?.name ?? '') + (call.function?.arguments ?? ''));
        }
        if (!firstTokenAt && delivered.length) firstTokenAt = performance.now();
        yield `data: ${JSON.stringify(chunk)}\n\n`;
      }
    } catch (error) {
      if (signal.aborted) return;
      // After the first byte an error is one event with the envelope, and no [DONE].
      const failure = fromUpstream(error);
      await settle(context.promptTokens, deliveredTokens(), failure);
      yield `data: ${JSON.stringify(errorEnvelope(failure))}\n\n`;
      return;
    }
    if (signal.aborted) return;

    let settlement: Settlement;
    try {
      const promptTokens = upstreamCount(upstreamUsage?.prompt_tokens) ?? context.promptTokens;
      settlement = await settle(promptTokens, upstreamCount(upstreamUsage?.completion_tokens) ?? deliveredTokens());
    } catch (error) {
      yield `data: ${JSON.stringify(errorEnvelope(fromUpstream(error)))}\n\n`;
      return;
    }
    if (events?.wants('llm.streaming.end', account.id)) {
      const { userId, model } = requestData(context);
      events.emit(
        llmEvent('llm.streaming.end', account.id, key.id, {
          requestId: context.requestId,
          streamId,
          totalChunks,
          model,
          userId,
        }),
      );
    }
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
    if (!settled) await settle(context.promptTokens, deliveredTokens()).catch(() => undefined);
    void chunks.return?.().catch(() => undefined);
  }
}
