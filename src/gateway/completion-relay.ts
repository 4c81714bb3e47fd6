/**
 * Relays a text-completion stream chunk by chunk in OpenAI SSE events, as chat's relay does: it meters what it
 * delivers, settles before the last event (the charge is durable before `[DONE]`), and when the client goes away
 * it settles for what was delivered.
 */
import { usdNumber, type Settlement } from '../billing/index.js';
import { errorEnvelope } from '../errors/index.js';
import type { CompletionPrompt, TextCompletion, Usage } from '../providers/index.js';
import { fromUpstream } from '../routing/index.js';
import type { CompletionRequest } from '../wire/index.js';
import { countTextTokens } from '../tokens/index.js';
import type { RequestContext } from './deps.js';
import { upstreamCount } from './settle.js';
import { StreamMeter } from './stream-meter.js';

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
  let upstreamUsage: Usage | undefined;
  let id = `cmpl-${context.requestId}`;
  let created = Math.floor(Date.now() / 1000);
  // Each choice's text is kept apart: what is counted when the upstream reports no usage, without `echo`'s prompt.
  const meter = new StreamMeter(context, (!first.done && first.value.id) || id);
  const deliveredTokens = () => generatedTokens(context, meter.choices());
  const firstChoiceText = () => meter.text(0);

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
        for (const choice of chunk.choices) meter.deliver(choice.text, { index: choice.index });
        yield `data: ${JSON.stringify(chunk)}\n\n`;
      }
    } catch (error) {
      if (signal.aborted) return;
      // After the first byte an error is one event with the envelope, and no [DONE].
      const failure = fromUpstream(error);
      await meter.settle(context.promptTokens, deliveredTokens(), failure);
      yield `data: ${JSON.stringify(errorEnvelope(failure))}\n\n`;
      return;
    }
    if (signal.aborted) return;

    let settlement: Settlement;
    try {
      const promptTokens = upstreamCount(upstreamUsage?.prompt_tokens) ?? context.promptTokens;
      const completionTokens = upstreamCount(upstreamUsage?.completion_tokens) ?? deliveredTokens();
      settlement = await meter.settle(promptTokens, completionTokens, undefined, firstChoiceText);
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
      const last = { id, object: 'text_completion', created, model: context.model.id, choices: [], usage };
      yield `data: ${JSON.stringify(last)}\n\n`;
    }
    yield 'data: [DONE]\n\n';
  } finally {
    // The client went away (or a settle failed): charge what was delivered, close the upstream.
    if (!meter.settled)
      await meter.settle(context.promptTokens, deliveredTokens(), undefined, firstChoiceText).catch(() => undefined);
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
