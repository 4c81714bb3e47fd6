/**
 * The request path of POST /v1/embeddings, top to bottom, in chat's steps:
 *   authenticate -> idempotency -> route -> admit (rate limits, credit hold) -> call -> settle -> record
 * The whole input is prompt; there is no completion, so the hold is the input's price and nothing is lowered.
 */
import { usdNumber, type Settlement } from '../billing/index.js';
import { GatewayError } from '../errors/index.js';
import { embeddingInputs, type EmbeddingInput } from '../providers/index.js';
import { countTextTokens } from '../tokens/index.js';
import { EmbeddingRequestSchema, withoutRoutingFields, type EmbeddingList } from '../wire/index.js';
import { embeddingsWay } from '../routing/index.js';
import { authenticate, measured } from './admit.js';
import { EMBEDDINGS, authorizedModel, fallbackModels } from './authorize.js';
import type { GatewayDeps } from './deps.js';
import { openAiProtocol } from './idempotency.js';
import { admitMetered, meteredCall, type Authenticated, type MeteredRequest } from './metered.js';
import type { RequestInput } from './request.js';
import { compiledValidator } from './schema.js';
import { settleAnswer } from './settle.js';
import { countedUsage, reportedCount } from '../pricing/index.js';

const validate = compiledValidator(EmbeddingRequestSchema);

export async function createEmbeddings(
  input: RequestInput,
  deps: GatewayDeps,
): Promise<{ headers: Record<string, string>; body: EmbeddingList }> {
  const started = performance.now();

  // 1. Authenticate: the key, the body, and models that embed and the key may use (the fallbacks too).
  const key = await authenticate(deps, input, 'chat');
  const body = validate(input.body);
  const model = authorizedModel(deps, key, body.model, EMBEDDINGS);
  const fallbacks = fallbackModels(deps, key, body.models, EMBEDDINGS);
  const inputs = embeddingInputs(body.input);
  const promptTokens = await measured(deps, input, key, () => tokensOf(inputs, model.contextLength));
  // The whole input is prompt; there is no completion, so the hold is the input's price and nothing is lowered.
  // The provider counts with its own tokenizer: the hold is at the most any counts (a token is at least a byte,
  // and each input at most the context), and the report is trusted up to every input filling it.
  const authenticated: Authenticated = { input, key, model, fallbacks, started };
  const request: MeteredRequest = {
    ...authenticated,
    timeoutMs: body.timeout_ms,
    hold: {
      promptTokens,
      promptCeiling: inputs.reduce((sum: number, item) => sum + ceilingOf(item, model.contextLength), 0),
      requestedMaxTokens: 0,
      choices: 1,
      modelMaxTokens: model.maxTokens,
      contextLength: inputs.length * model.contextLength,
    },
    userId: body.user,
    stream: false,
    promptText: () => inputs.map((item) => (typeof item === 'string' ? item : '')).join('\n'),
  };

  // 2. Idempotency: a retry gets the first answer back, without running or charging.
  const answer = await deps.idempotency.run<EmbeddingList>(
    key,
    input,
    async () => {
      // 3-5. Route, the rate limits, the hold, then the call. The routing fields and the encoding stay here.
      const admitted = await admitMetered(deps, request);
      const { encoding_format: encoding, ...upstream } = withoutRoutingFields(body);
      const { context, result, headers } = await meteredCall(admitted, embeddingsWay(upstream));

      // 6. Settle at the upstream's count (or ours), durable before the answer leaves; 7. record off the path.
      const used = () => countedUsage(reportedCount(result.promptTokens) ?? promptTokens, 0);
      const billed = await settleAnswer(context, used, () => '');
      const list = embeddingList(result.vectors, encoding === 'base64', context.model.id, billed);
      return { kind: 'json', headers, body: list };
    },
    openAiProtocol('embeddings'),
  );
  if (answer.kind !== 'json') throw new GatewayError('internal_error');
  return { headers: answer.headers, body: answer.body };
}

/** OpenAI's list of embeddings, with the billed usage and its cost. */
function embeddingList(vectors: number[][], base64: boolean, model: string, billed: Settlement): EmbeddingList {
  return {
    object: 'list',
    data: vectors.map((vector, index) => ({
      object: 'embedding',
      index,
      embedding: base64 ? base64Of(vector) : vector,
    })),
    model,
    usage: {
      prompt_tokens: billed.promptTokens,
      total_tokens: billed.promptTokens,
      cost: usdNumber(billed.chargedNano),
    },
  };
}

/** The input's tokens; each input must fit the model's context on its own (OpenAI's rule for embeddings). */
function tokensOf(inputs: EmbeddingInput[], contextLength: number): number {
  let total = 0;
  for (const [index, input] of inputs.entries()) {
    const tokens = typeof input === 'string' ? countTextTokens(input) : input.length;
    if (tokens > contextLength)
      throw new GatewayError('context_length_exceeded', {
        message: `This model's maximum context length is ${contextLength} tokens, however input ${index} has ${tokens} tokens. Please reduce the length of the input.`,
        param: 'input',
      });
    total += tokens;
  }
  return total;
}

/** The most tokens a provider may count for one input: its bytes (a token array is exact), at most the context. */
function ceilingOf(input: EmbeddingInput, contextLength: number): number {
  return typeof input === 'string' ? Math.min(Buffer.byteLength(input) + 1, contextLength) : input.length;
}

/** OpenAI's base64 encoding: the vector's float32 values, little-endian. */
function base64Of(vector: number[]): string {
  const bytes = Buffer.alloc(vector.length * 4);
  vector.forEach((value, i) => bytes.writeFloatLE(value, i * 4));
  return bytes.toString('base64');
}
