/**
 * Relays a text-completion stream (`openai-stream.ts`): each choice's text is kept apart, so that what `echo`
 * repeated of the prompt is not counted as generated.
 */
import type { CompletionPrompt, TextCompletion } from '../providers/index.js';
import type { CompletionRequest } from '../wire/index.js';
import { countTextTokens } from '../tokens/index.js';
import type { RequestContext } from './deps.js';
import { relayOpenAiStream, type OpenAiStreamStart } from './openai-stream.js';

/** One admitted text-completion request, with its validated body and its prompts listed. */
export interface CompletionContext extends RequestContext {
  readonly body: CompletionRequest;
  readonly prompts: readonly CompletionPrompt[];
}

/** A text-completion stream opened up to its first chunk: after that nothing is retried. */
export type TextStreamStart = OpenAiStreamStart<TextCompletion>;

export function relayCompletionStream(
  context: CompletionContext,
  start: TextStreamStart,
  signal: AbortSignal,
): AsyncGenerator<string, void, undefined> {
  return relayOpenAiStream(context, start, signal, {
    object: 'text_completion',
    fallbackId: `cmpl-${context.requestId}`,
    includeUsage: context.body.stream_options?.include_usage === true,
    deliver: (meter, chunk) => {
      for (const choice of chunk.choices) meter.deliver(choice.text, { index: choice.index });
    },
    deliveredTokens: (meter) => generatedTokens(context, meter.choices()),
    // llm.completion's text is the first choice's, as for an answer that is not streamed.
    answer: (meter) => meter.text(0),
  });
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
