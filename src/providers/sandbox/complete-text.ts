/**
 * The sandbox's text completions: per prompt and choice, model `lorem` writes prompt-seeded lorem ipsum and every
 * other model continues with the prompt itself; then stop sequences and `max_tokens` cut it like OpenAI's would.
 * `echo` puts the prompt in front; `logprobs` lists the text's tokens, each certain (log probability 0).
 */
import { decode, encode } from 'gpt-tokenizer/encoding/o200k_base';
import { countTextTokens, measureSliced } from '../../tokens/index.js';
import type { CompletionFinishReason } from '../../wire/index.js';
import {
  completionPrompts,
  promptTokensOf,
  type CompletionPrompt,
  type UpstreamTextCompletion,
  type TextCompletionCall,
} from '../completions.js';
import { UpstreamError } from '../provider.js';
import { SANDBOX_MAX_ANSWER_BYTES, SANDBOX_MAX_CHOICES } from './answer.js';
import { cutAtStop, cutToBytes, cutToTokens } from './cut.js';
import { pieces } from './stream.js';
import { hash, loremText } from './text.js';

/** OpenAI's default completion bound when a request sets no `max_tokens`. */
const DEFAULT_MAX_TOKENS = 16;
const NO_SPECIAL = { disallowedSpecial: new Set<string>() };
const SYSTEM_FINGERPRINT = 'fp_sandbox';

type Choice = UpstreamTextCompletion['choices'][number];
type Logprobs = NonNullable<Choice['logprobs']>;

interface TextChoice {
  index: number;
  /** The prompt when `echo`, else ''. */
  echoed: string;
  generated: string;
  finishReason: CompletionFinishReason;
  /** Where the text starts, counted in characters from the start of the prompt (OpenAI's `text_offset`). */
  offset: number;
}

export async function completeSandboxText(call: TextCompletionCall): Promise<UpstreamTextCompletion> {
  const { choices, usage } = await answerOf(call);
  const top = call.body.logprobs;
  return {
    ...head(call),
    choices: choices.map((choice) => {
      const text = choice.echoed + choice.generated;
      const logprobs = top == null ? null : logprobsOf(tokensOf(text), choice, top);
      return { text, index: choice.index, logprobs, finish_reason: choice.finishReason };
    }),
    usage,
  };
}

/**
 * The answer in `text_completion` chunks: per choice the echoed prompt, word-sized pieces (a token each when
 * `logprobs` is asked), then a chunk with the finish reason; choices interleaved; then always a usage chunk.
 */
export async function* streamSandboxText(call: TextCompletionCall): AsyncGenerator<UpstreamTextCompletion> {
  const { choices, usage } = await answerOf(call);
  const top = call.body.logprobs;
  const perChoice = choices.map((choice): Choice[] => {
    const parts =
      top == null
        ? (choice.echoed ? [choice.echoed] : []).concat(pieces(choice.generated))
        : tokensOf(choice.echoed + choice.generated);
    const chunks: Choice[] = [];
    let offset = choice.offset;
    for (const text of parts) {
      const logprobs = top == null ? null : logprobsOf([text], { ...choice, offset }, top);
      chunks.push({ text, index: choice.index, logprobs, finish_reason: null });
      offset += text.length;
    }
    chunks.push({ text: '', index: choice.index, logprobs: null, finish_reason: choice.finishReason });
    return chunks;
  });
  const base = head(call);
  const steps = Math.max(...perChoice.map((chunks) => chunks.length));
  for (let step = 0; step < steps; step++) {
    for (const chunks of perChoice) {
      const choice = chunks[step];
      if (!choice) continue;
      // Yield to the event loop so a client disconnect can abort the signal between chunks.
      await new Promise(setImmediate);
      if (call.signal.aborted) return;
      yield { ...base, choices: [choice] };
    }
  }
  await new Promise(setImmediate);
  if (call.signal.aborted) return;
  yield { ...base, choices: [], usage };
}

interface TextAnswer {
  choices: TextChoice[];
  usage: NonNullable<UpstreamTextCompletion['usage']>;
}

/** The answer; its prompts are counted in slices that yield when large (the request's own queue). */
async function answerOf(call: TextCompletionCall): Promise<TextAnswer> {
  const { body } = call;
  const n = body.n ?? 1;
  if (n > SANDBOX_MAX_CHOICES)
    throw new UpstreamError(
      'sandbox',
      'http',
      `Invalid 'n': the sandbox answers 1 to ${SANDBOX_MAX_CHOICES} choices, got ${n}.`,
      {
        status: 400,
        param: 'n',
      },
    );
  const prompts = completionPrompts(body.prompt);
  const suffixTokens = body.suffix ? countTextTokens(body.suffix) : 0;
  const countPrompts = () => prompts.reduce((sum, prompt) => sum + promptTokensOf(prompt) + suffixTokens, 0);
  const promptTokens = await measureSliced(countPrompts, { queue: `sandbox ${call.requestId}`, signal: call.signal });
  const limit = body.max_tokens ?? DEFAULT_MAX_TOKENS;
  const bytes = Math.floor(SANDBOX_MAX_ANSWER_BYTES / (prompts.length * n));
  const stops = typeof body.stop === 'string' ? [body.stop] : (body.stop ?? []);
  let completionTokens = 0;
  const choices: TextChoice[] = [];
  for (const [at, prompt] of prompts.entries()) {
    const text = textOf(prompt);
    for (let i = 0; i < n; i++) {
      const full = body.model === 'lorem' ? ` ${loremText(hash(text + (body.seed ?? '')) + i)}` : text;
      const stopped = cutAtStop(full, stops.filter(Boolean));
      const generated = cutToTokens(cutToBytes(stopped, bytes), limit);
      completionTokens += countTextTokens(generated);
      choices.push({
        index: at * n + i,
        echoed: body.echo ? text : '',
        generated,
        finishReason: generated.length < stopped.length ? 'length' : 'stop',
        offset: body.echo ? 0 : text.length,
      });
    }
  }
  const usage = {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
  };
  return { choices, usage };
}

/** A prompt's text: a token array is decoded (o200k ids; unknown ids make no text). */
function textOf(prompt: CompletionPrompt): string {
  if (typeof prompt === 'string') return prompt;
  try {
    return decode(prompt);
  } catch {
    return '';
  }
}

/** The text in its tokens, each decoded on its own (a character split between tokens shows as U+FFFD). */
function tokensOf(text: string): string[] {
  return encode(text, NO_SPECIAL).map((token) => decode([token]));
}

/** OpenAI's `logprobs` for these tokens, every one certain; the echoed prompt's first token has none. */
function logprobsOf(tokens: string[], choice: TextChoice, top: number): Logprobs {
  const textOffset: number[] = [];
  let offset = choice.offset;
  for (const token of tokens) {
    textOffset.push(offset);
    offset += token.length;
  }
  return {
    tokens,
    token_logprobs: tokens.map((_, i) => (i === 0 && choice.offset === 0 && choice.echoed ? null : 0)),
    top_logprobs: tokens.map((token) => (top > 0 ? { [token]: 0 } : null)),
    text_offset: textOffset,
  };
}

let anonymousCalls = 0;

function head(call: TextCompletionCall) {
  return {
    id: `cmpl-${call.requestId || `sandbox${++anonymousCalls}`}`,
    object: 'text_completion' as const,
    created: Math.floor(Date.now() / 1000),
    model: call.body.model,
    system_fingerprint: SYSTEM_FINGERPRINT,
  };
}
