/**
 * Relays a stream in OpenAI's format (chat completions, text completions) chunk by chunk, as objects: HTTP writes
 * them, and the endpoints translated through chat read them as they are. It meters what it delivers, settles
 * before the last event (the charge is durable before `[DONE]`), and when the client goes away it settles for what
 * was delivered. Each endpoint says how its chunks deliver text (`OpenAiStreamFormat`).
 */
import type { Settlement } from '../billing/index.js';
import { errorEnvelope, type ErrorEnvelope } from '../errors/index.js';
import { fromUpstream } from '../routing/index.js';
import { DONE, type UpstreamUsage } from '../wire/index.js';
import type { RequestContext } from './deps.js';
import { billedUsage } from './settle.js';
import { chatUsage, type TokenUsage } from '../pricing/index.js';
import { StreamMeter, type StreamFailure } from './stream-meter.js';

/** What every OpenAI stream chunk has: its id and time, the model, its choices, and maybe the usage. */
export interface OpenAiChunk {
  id: string;
  created: number;
  model: string;
  choices: unknown[];
  usage?: UpstreamUsage | null | undefined;
  /** The service tier OpenAI served at (priced at its own rates). */
  service_tier?: unknown;
}

/**
 * One event of a relayed OpenAI stream: a chunk (the last, when the client asked for usage, has no choices and the
 * billed usage with its cost), an error envelope after the first byte, or `[DONE]`.
 */
export interface OpenAiStreamEvent<C extends OpenAiChunk> {
  readonly event?: undefined;
  readonly data: C | ErrorEnvelope | typeof DONE.data;
}

/** An upstream stream opened up to its first chunk: after that nothing is retried. */
export interface OpenAiStreamStart<C extends OpenAiChunk> {
  first: IteratorResult<C>;
  chunks: AsyncIterator<C>;
}

/** How one endpoint's chunks are metered and its stream is closed. */
export interface OpenAiStreamFormat<C extends OpenAiChunk> {
  /** The stream's id when the upstream gives none. */
  fallbackId: string;
  includeUsage: boolean;
  /** The chunk sent last when the client asked for usage: no choices, the billed usage. */
  usageChunk(head: Pick<OpenAiChunk, 'id' | 'created' | 'model'>, usage: UpstreamUsage): C;
  /** Puts a chunk's text on the meter (which throws past the answer-size bound). */
  deliver(meter: StreamMeter, chunk: C): void;
  /** Completion tokens of what was delivered, when the upstream reports none. */
  deliveredTokens(meter: StreamMeter): number;
  /** The text of llm.completion (all that was delivered unless given). */
  answer?: (meter: StreamMeter) => string;
}

/** The finish reason a chunk's (or a completion's) choices give: the first one set. */
export function finishReasonOf(choices: readonly unknown[]): string | undefined {
  for (const choice of choices) {
    const reason = (choice as { finish_reason?: unknown } | null)?.finish_reason;
    if (typeof reason === 'string') return reason;
  }
  return undefined;
}

/** An error event of a relayed stream (the envelope, after the first byte). */
export function isErrorEnvelope(data: object): data is ErrorEnvelope {
  return 'error' in data && !('choices' in data);
}

export async function* relayOpenAiStream<C extends OpenAiChunk>(
  context: RequestContext,
  { first, chunks }: OpenAiStreamStart<C>,
  signal: AbortSignal,
  format: OpenAiStreamFormat<C>,
): AsyncGenerator<OpenAiStreamEvent<C>, void, undefined> {
  const { includeUsage } = format;
  let upstreamUsage: UpstreamUsage | undefined;
  let id = format.fallbackId;
  let created = Math.floor(Date.now() / 1000);
  const meter = new StreamMeter(context, (!first.done && first.value.id) || id);
  const answer = format.answer && (() => format.answer!(meter));
  const settle = (usage: TokenUsage, failure?: StreamFailure) => meter.settle(usage, failure, answer);
  // Cut short, the stream is charged the whole prompt the provider took in (as it reported it when it did, else as
  // held: fetched content unknown to tollgate included) and what was delivered.
  const own = { prompt: context.promptCeiling, completion: () => format.deliveredTokens(meter) };
  const delivered = () =>
    chatUsage(
      upstreamUsage && { ...upstreamUsage, completion_tokens: undefined, completion_tokens_details: undefined },
      own,
    );
  let serviceTier: unknown;

  try {
    try {
      for (let next = first; !next.done; next = await chunks.next()) {
        const chunk = next.value;
        id = chunk.id || id;
        created = chunk.created || created;
        serviceTier = chunk.service_tier ?? serviceTier;
        if (chunk.usage !== undefined) {
          // Upstreams asked for usage put it (or `usage: null`) on chunks; clients that did not ask never see it.
          if (chunk.usage) {
            upstreamUsage = chunk.usage;
            if (chunk.choices.length === 0) continue;
          }
          // A provider that tells its usage early (Anthropic's prompt) tells the client once, at the end.
          if (includeUsage) chunk.usage = null;
          else delete chunk.usage;
        }
        chunk.model = context.model.id;
        meter.finishReason = finishReasonOf(chunk.choices) ?? meter.finishReason;
        format.deliver(meter, chunk);
        yield { data: chunk };
      }
    } catch (error) {
      if (signal.aborted) return;
      // After the first byte an error is one event with the envelope, and no [DONE].
      const failure = fromUpstream(error);
      await settle(delivered(), failure);
      yield { data: errorEnvelope(failure) };
      return;
    }
    if (signal.aborted) return;

    let settlement: Settlement;
    try {
      settlement = await settle(chatUsage(upstreamUsage, own, serviceTier));
    } catch (error) {
      yield { data: errorEnvelope(fromUpstream(error)) };
      return;
    }
    meter.end();
    if (includeUsage) {
      const head = { id, created, model: context.model.id };
      yield { data: format.usageChunk(head, billedUsage(upstreamUsage, settlement)) };
    }
    yield DONE;
  } finally {
    // The client went away (or a settle failed): charge what was delivered, close the upstream.
    if (!meter.settled) await settle(delivered()).catch(() => undefined);
    void chunks.return?.().catch(() => undefined);
  }
}
