/**
 * Relays a text-completion stream chunk by chunk in OpenAI SSE events, as chat's relay does: it meters what it
 * delivers, settles before the last event (the charge is durable before `[DONE]`), and when the client goes away
 * it settles for what was delivered.
 */
import { usdNumber, type Settlement } from '../billing/index.js';
import { errorEnvelope, type GatewayError } from '../errors/index.js';
import { llmEvent } from '../events/index.js';
import {
  MAX_ANSWER_BYTES,
  tooLarge,
  type CompletionPrompt,
  type TextCompletion,
  type Usage,
} from '../providers/index.js';
import { fromUpstream } from '../routing/index.js';
import type { CompletionRequest } from '../wire/index.js';
import { countTextTokens } from '../tokens/index.js';
import type { RequestContext } from './deps.js';
import { requestData } from './events.js';
import { finish } from './record.js';
import { settleOrFail, upstreamCount } from './settle.js';

/** One admitted text-completion request, with its validated body and its prompts listed. */
export interface CompletionContext extends RequestContext {
  readonly body: CompletionRequest;
  readonly prompts: readonly CompletionPrompt[];
}

/** A text-completion stream opened up to its first chunk: after that nothing is retried. */
export interface TextStreamStart {
  first: IteratorResult<TextCompletion>;
  chunks: AsyncIterator<TextCompletion>;
}

export async function* relayCompletionStream(
  context: CompletionContext,
  { first, chunks }: TextStreamStart,
  signal: AbortSignal,
): AsyncGenerator<string, void, undefined> {
  const includeUsage = context.body.stream_options?.include_usage === true;
  // The text delivered per choice index: what is counted when the upstream reports no usage.
  const delivered = new Map<number, string[]>();
  let deliveredChars = 0;
  let upstreamUsage: Usage | undefined;
  let id = `cmpl-${context.requestId}`;
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

  const textOf = (index: number) => delivered.get(index)?.join('') ?? '';
  const deliveredTokens = () =>
    generatedTokens(
      context,
      [...delivered.keys()].map((index) => ({ index, text: textOf(index) })),
    );
  const settle = async (promptTokens: number, completionTokens: number, failed?: GatewayError) => {
    settled = true;
    const error = failed && { code: failed.code, message: failed.message };
    const settlement = await settleOrFail(
      context,
      promptTokens,
      completionTokens,
      error ? { error } : { text: () => textOf(0) },
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
        for (const choice of chunk.choices) deliveredChars += choice.text.length;
        if (deliveredChars > MAX_ANSWER_BYTES) throw tooLarge(context.providerId);
        for (const choice of chunk.choices) {
          if (!choice.text) continue;
          const { index } = choice;
          const pieces = delivered.get(index);
          if (pieces) pieces.push(choice.text);
          else delivered.set(index, [choice.text]);
          if (chunkEvents) {
            events!.emit(
              llmEvent('llm.streaming.chunk', account.id, key.id, {
                requestId: context.requestId,
                streamId,
                chunkIndex: totalChunks,
                content: choice.text,
              }),
            );
          }
          totalChunks++;
        }
        if (!firstTokenAt && delivered.size) firstTokenAt = performance.now();
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
      const last = { id, object: 'text_completion', created, model: context.model.id, choices: [], usage };
      yield `data: ${JSON.stringify(last)}\n\n`;
    }
    yield 'data: [DONE]\n\n';
  } finally {
    // The client went away (or a settle failed): charge what was delivered, close the upstream.
    if (!settled) await settle(context.promptTokens, deliveredTokens()).catch(() => undefined);
    void chunks.return?.().catch(() => undefined);
  }
}

/**
 * Completion tokens of choices whose upstream reported no usage: their text, less the prompt that `echo` put in
 * front (recognised for text prompts).
 */
export function generatedTokens(context: CompletionContext, choices: ReadonlyArray<{ index: number; text: string }>) {
  let tokens = 0;
  for (const choice of choices) tokens += countTextTokens(withoutEcho(context, choice.index, choice.text));
  return tokens;
}

/** A choice's text without the prompt `echo` put in front of it. */
function withoutEcho(context: CompletionContext, index: number, text: string): string {
  if (!context.body.echo) return text;
  const prompt = context.prompts[Math.floor(index / (context.body.n ?? 1))];
  return typeof prompt === 'string' && text.startsWith(prompt) ? text.slice(prompt.length) : text;
}
