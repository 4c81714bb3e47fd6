/**
 * The request path of POST /v1/completions (OpenAI's legacy text completions), in chat's steps:
 *   authenticate -> idempotency -> route -> admit (rate limits, credit hold) -> call and relay -> settle -> record
 * Every prompt gets `n` choices (`best_of` generated), each bounded by `max_tokens`, 16 when unset as at OpenAI:
 * the bound always goes upstream, so no server's own default can exceed the hold.
 */
import type { CatalogModel } from '../catalog/index.js';
import { GatewayError } from '../errors/index.js';
import {
  completionPrompts,
  promptTokensOf,
  type CompletionPrompt,
  type Provider,
  type TextCompletionCall,
} from '../providers/index.js';
import type { AttemptCall, Deployment, Way } from '../routing/index.js';
import { countTextTokens } from '../tokens/index.js';
import {
  CompletionRequestSchema,
  withoutRoutingFields,
  type Completion,
  type CompletionRequest,
  type UpstreamTextCompletion,
} from '../wire/index.js';
import { authenticate, measured } from './admit.js';
import { TEXT_COMPLETIONS, authorizedModel, fallbackModels } from './authorize.js';
import {
  generatedTokens,
  relayCompletionStream,
  type EchoedPrompts,
  type TextStreamStart,
} from './completion-relay.js';
import type { GatewayDeps, RequestContext } from './deps.js';
import { openAiProtocol } from './idempotency.js';
import { admitMetered, meteredCall, type Authenticated, type MeteredRequest } from './metered.js';
import type { Answer, RequestInput } from './request.js';
import { compiledValidator } from './schema.js';
import { finishReasonOf } from './openai-stream.js';
import { billedUsage, settleAnswer } from './settle.js';
import { chatUsage } from '../pricing/index.js';

/** OpenAI's completion bound when a request sets no `max_tokens`. */
const DEFAULT_COMPLETION_MAX_TOKENS = 16;
/** Fields counted apart, never sent upstream, or scalars that carry no prompt. */
const NO_PROMPT_FIELDS = new Set([
  'model',
  'models',
  'timeout_ms',
  'prompt',
  'suffix',
  'max_tokens',
  'temperature',
  'top_p',
  'n',
  'best_of',
  'stream',
  'logprobs',
  'echo',
  'presence_penalty',
  'frequency_penalty',
  'seed',
]);

const validate = compiledValidator(CompletionRequestSchema);

export async function createCompletion(input: RequestInput, deps: GatewayDeps): Promise<Answer<Completion>> {
  const started = performance.now();

  // 1. Authenticate: the key, the body, and models that complete text and the key may use (the fallbacks too).
  const key = await authenticate(deps, input, 'chat');
  const body = validate(input.body);
  const model = authorizedModel(deps, key, body.model, TEXT_COMPLETIONS);
  const fallbacks = fallbackModels(deps, key, body.models, TEXT_COMPLETIONS);
  const { request, echoed } = await measured(deps, input, key, () =>
    meteredCompletion({ input, key, model, fallbacks, started }, body),
  );

  // 2. Idempotency: a retry gets the first answer back, without running or charging.
  return deps.idempotency.run<Completion>(
    key,
    input,
    async () => {
      // 3-4. Route, the rate limits, the hold; the bound admission allowed always goes upstream.
      const admitted = await admitMetered(deps, request);
      const upstreamBody = { ...withoutRoutingFields(body), max_tokens: admitted.reservation.maxTokens };

      // 5. Call and relay: retries and fallbacks inside the router; a failure releases the hold.
      if (body.stream) {
        const { context, result, headers } = await meteredCall(admitted, textStreamWay(upstreamBody));
        const includeUsage = body.stream_options?.include_usage === true;
        const events = relayCompletionStream(context, result, input.signal, { includeUsage, echoed });
        return { kind: 'stream', headers, events };
      }
      const { context, result, headers } = await meteredCall(admitted, textWay(upstreamBody));
      // 6-7. Settled, durable before the answer leaves; recorded off the path.
      return { kind: 'json', headers, body: await settleText(context, result, echoed) };
    },
    openAiProtocol('completions'),
  );
}

/**
 * What a completion request holds: every prompt's `best_of` (or `n`) choices at the completion bound (16 when
 * unset, as at OpenAI). Each prompt must fit the model's context on its own.
 */
function meteredCompletion(
  authenticated: Authenticated,
  body: CompletionRequest,
): { request: MeteredRequest; echoed: EchoedPrompts } {
  const { model } = authenticated;
  const n = body.n ?? 1;
  if (body.best_of != null && body.best_of < n)
    throw new GatewayError('invalid_request', {
      message: `best_of must be greater than or equal to n (${body.best_of} < ${n}).`,
      param: 'best_of',
    });
  const prompts = completionPrompts(body.prompt);
  const maxTokens = body.max_tokens ?? DEFAULT_COMPLETION_MAX_TOKENS;
  const size = measureCompletionPrompt(body, prompts, maxTokens, model);
  const request: MeteredRequest = {
    ...authenticated,
    timeoutMs: body.timeout_ms,
    hold: {
      promptTokens: size.tokens,
      requestedMaxTokens: maxTokens,
      choices: prompts.length * Math.max(n, body.best_of ?? 1),
      modelMaxTokens: model.maxTokens,
      contextLength: Number.MAX_SAFE_INTEGER,
    },
    userId: body.user,
    stream: body.stream === true,
    promptText: () => prompts.map((prompt) => (typeof prompt === 'string' ? prompt : '')).join('\n'),
  };
  return { request, echoed: { echo: body.echo === true, n, prompts } };
}

/** Settles an answered completion at the upstream's usage (or tollgate's count of what it generated). */
async function settleText(
  context: RequestContext,
  completion: UpstreamTextCompletion,
  echoed: EchoedPrompts,
): Promise<Completion> {
  const billed = await settleAnswer(
    context,
    () =>
      chatUsage(completion.usage, {
        prompt: context.promptTokens,
        completion: () => generatedTokens(echoed, completion.choices),
      }),
    () => completion.choices[0]?.text ?? '',
    { answerId: completion.id, finishReason: finishReasonOf(completion.choices) },
  );
  return { ...completion, model: context.model.id, usage: billedUsage(completion.usage, billed) };
}

/** A text-completion request asked of each deployment for its whole answer. */
function textWay(body: CompletionRequest): Way<UpstreamTextCompletion> {
  return {
    streaming: false,
    attempt: (deployment, attempt) => completer(deployment).completeText(textCall(body, deployment, attempt)),
  };
}

/** A text-completion request asked of each deployment as a stream, up to its first chunk. */
function textStreamWay(body: CompletionRequest): Way<TextStreamStart> {
  return {
    streaming: true,
    attempt: (deployment, attempt) => openTextStream(completer(deployment), textCall(body, deployment, attempt)),
  };
}

type TextCompleter = Provider & Required<Pick<Provider, 'completeText' | 'streamText'>>;

/** The deployment's provider, when it serves text completions; a 400 otherwise (it is never asked). */
function completer(deployment: Deployment): TextCompleter {
  const { provider } = deployment;
  if (servesText(provider)) return provider;
  throw new GatewayError('invalid_request', {
    message: `The model '${deployment.model.id}' is served by '${deployment.providerId}', which does not serve text completions`,
    param: 'model',
  });
}

function servesText(provider: Provider): provider is TextCompleter {
  return provider.completeText !== undefined && provider.streamText !== undefined;
}

/** A stream opened up to its first chunk: a failure before it is still retried, nothing after it. */
async function openTextStream(provider: TextCompleter, call: TextCompletionCall): Promise<TextStreamStart> {
  const chunks = provider.streamText(call)[Symbol.asyncIterator]();
  return { first: await chunks.next(), chunks };
}

/** One deployment's call: its own model name. */
function textCall(body: CompletionRequest, deployment: Deployment, attempt: AttemptCall): TextCompletionCall {
  return { ...attempt, body: { ...body, model: deployment.upstreamModel } };
}

/**
 * The prompt's tokens: every prompt with the suffix, plus any other field that goes upstream with text in it.
 * Each prompt must fit the context with its completion bound, on its own.
 */
function measureCompletionPrompt(
  body: CompletionRequest,
  prompts: CompletionPrompt[],
  maxTokens: number,
  model: CatalogModel,
): { tokens: number } {
  const suffixTokens = body.suffix ? countTextTokens(body.suffix) : 0;
  let tokens = 0;
  for (const [index, prompt] of prompts.entries()) {
    const own = promptTokensOf(prompt) + suffixTokens;
    if (own + maxTokens > model.contextLength)
      throw new GatewayError('context_length_exceeded', {
        message:
          `This model's maximum context length is ${model.contextLength} tokens, however you requested ` +
          `${own + maxTokens} tokens (${own} in prompt ${index}; ${maxTokens} for the completion). ` +
          'Please reduce your prompt; or completion length.',
        param: 'prompt',
      });
    tokens += own;
  }
  for (const name in body) {
    const value = body[name];
    if (NO_PROMPT_FIELDS.has(name) || value == null || isUsageOption(name, value)) continue;
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    tokens += 1 + countTextTokens(text);
  }
  return { tokens };
}

/** `stream_options` holding only `include_usage`: a switch, no prompt. */
function isUsageOption(name: string, value: unknown): boolean {
  if (name !== 'stream_options' || typeof value !== 'object' || value === null) return false;
  return Object.entries(value).every(([field, option]) => field === 'include_usage' && typeof option === 'boolean');
}
