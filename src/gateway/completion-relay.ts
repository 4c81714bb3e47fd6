/**
 * Relays a text-completion stream (`openai-stream.ts`): each choice's text is kept apart, so that what `echo`
 * repeated of the prompt is not counted as generated.
 */
import type { CompletionPrompt } from '../providers/index.js';
import { countTextTokens } from '../tokens/index.js';
import type { UpstreamTextCompletion } from '../wire/index.js';
import type { RequestContext } from './deps.js';
import { relayOpenAiStream, type OpenAiStreamEvent, type OpenAiStreamStart } from './openai-stream.js';

/** What the count of a completion's generated tokens must know of its request: what `echo` put in front. */
export interface EchoedPrompts {
  echo: boolean;
  /** Choices per prompt (`n`). */
  n: number;
  prompts: readonly CompletionPrompt[];
}

/** A text-completion stream opened up to its first chunk: after that nothing is retried. */
export type TextStreamStart = OpenAiStreamStart<UpstreamTextCompletion>;

export function relayCompletionStream(
  context: RequestContext,
  start: TextStreamStart,
  signal: AbortSignal,
  { includeUsage, echoed }: { includeUsage: boolean; echoed: EchoedPrompts },
): AsyncGenerator<OpenAiStreamEvent<UpstreamTextCompletion>, void, undefined> {
  return relayOpenAiStream(context, start, signal, {
    fallbackId: `cmpl-${context.requestId}`,
    includeUsage,
    usageChunk: (head, usage) => ({ ...head, object: 'text_completion', choices: [], usage }),
    deliver: (meter, chunk) => {
      for (const choice of chunk.choices) meter.deliver(choice.text, { index: choice.index });
    },
    deliveredTokens: (meter) => generatedTokens(echoed, meter.choices()),
    // llm.completion's text is the first choice's, as for an answer that is not streamed.
    answer: (meter) => meter.text(0),
  });
}

/**
 * Completion tokens of choices whose upstream reported no usage: their text, less the prompt that `echo` put in
 * front (recognised for text prompts).
 */
export function generatedTokens(echoed: EchoedPrompts, choices: ReadonlyArray<{ index: number; text: string }>) {
  let tokens = 0;
  for (const choice of choices) tokens += countTextTokens(withoutEcho(echoed, choice.index, choice.text));
  return tokens;
}

/** A choice's text without the prompt `echo` put in front of it. */
function withoutEcho({ echo, n, prompts }: EchoedPrompts, index: number, text: string): string {
  if (!echo) return text;
  const prompt = prompts[Math.floor(index / n)];
  return typeof prompt === 'string' && text.startsWith(prompt) ? text.slice(prompt.length) : text;
}
