/**
 * What every stream relay keeps about the answer it delivers, whatever the protocol: the text sent (counted when
 * the upstream reports no usage, and the `completion` of llm.completion), the answer-size bound, the time of the
 * first token, the account's llm.streaming.* events, and the stream's one settlement (the charge, then the record).
 */
import type { Settlement } from '../billing/index.js';
import { llmEvent } from '../events/index.js';
import { MAX_ANSWER_BYTES, tooLarge } from '../providers/index.js';
import type { TokenUsage } from '../pricing/index.js';
import { countTextTokens } from '../tokens/index.js';
import type { RequestContext } from './deps.js';
import { requestData } from './events.js';
import { recordOutcome } from './record.js';
import { settleOrFail } from './settle.js';

/** Why a stream failed, as the client was told: the code and message, and the HTTP status when there is one. */
export interface StreamFailure {
  code: string;
  message: string;
  status?: number | undefined;
}

export class StreamMeter {
  /** Once true, the stream is charged (or its failure recorded): the relay's `finally` settles it otherwise. */
  settled = false;
  /** Why the answer stopped, as the client's protocol says it; the relay sets it from the stream's events. */
  finishReason: string | null = null;
  /** The text delivered per choice index (one choice, 0, for all but text completions). */
  private readonly pieces = new Map<number, string[]>();
  private chars = 0;
  private firstTokenAt = 0;
  private chunks = 0;
  /** One check per stream: no chunk event is built when nobody listens. */
  private readonly chunkEvents: boolean;

  constructor(
    private readonly context: RequestContext,
    private readonly streamId: string,
  ) {
    const { events } = context.deps;
    const { account, key } = context.reservation;
    this.chunkEvents = events?.wants('llm.streaming.chunk', account.id) === true;
    if (events?.wants('llm.streaming.start', account.id))
      events.emit(llmEvent('llm.streaming.start', account.id, key.id, { ...requestData(context), streamId }));
  }

  /**
   * Text sent to the client. Past MAX_ANSWER_BYTES in all an endless answer is cut (this throws). Content is an
   * llm.streaming.chunk; what is not (`chunk: false`: a tool call's name and arguments) is only counted.
   */
  deliver(text: string, { index = 0, chunk = true }: { index?: number; chunk?: boolean } = {}): void {
    if (!text) return;
    this.chars += text.length;
    if (this.chars > MAX_ANSWER_BYTES) throw tooLarge(this.context.providerId);
    const pieces = this.pieces.get(index);
    if (pieces) pieces.push(text);
    else this.pieces.set(index, [text]);
    this.firstTokenAt ||= performance.now();
    if (!chunk) return;
    if (this.chunkEvents) {
      const { account, key } = this.context.reservation;
      const data = {
        requestId: this.context.requestId,
        streamId: this.streamId,
        chunkIndex: this.chunks,
        content: text,
      };
      this.context.deps.events!.emit(llmEvent('llm.streaming.chunk', account.id, key.id, data));
    }
    this.chunks++;
  }

  /** The text delivered: of one choice, or of all of them. */
  text(index?: number): string {
    if (index !== undefined) return this.pieces.get(index)?.join('') ?? '';
    let text = '';
    for (const pieces of this.pieces.values()) text += pieces.join('');
    return text;
  }

  /** Each choice's text, for counts that treat choices apart. */
  choices(): Array<{ index: number; text: string }> {
    return [...this.pieces.keys()].map((index) => ({ index, text: this.text(index) }));
  }

  /** Tokens of everything delivered, when the upstream reported no usage. */
  tokens(): number {
    return countTextTokens(this.text());
  }

  /**
   * Charges the stream at this usage (a failed one too: for what was delivered), durable before the relay sends
   * its last event, then records it off the path. `answer` is llm.completion's text (all that was delivered unless
   * given).
   */
  async settle(
    usage: TokenUsage,
    failure?: StreamFailure,
    answer: () => string = () => this.text(),
  ): Promise<Settlement> {
    this.settled = true;
    const error = failure && { code: failure.code, message: failure.message };
    const end = { answerId: this.streamId, finishReason: this.finishReason, firstTokenAt: this.firstTokenAt };
    const settlement = await settleOrFail(this.context, usage, error ? { error } : { text: answer }, end);
    recordOutcome(this.context, {
      ok: !failure,
      ...(failure ? { status: failure.status, error } : {}),
      promptTokens: settlement.promptTokens,
      completionTokens: settlement.completionTokens,
      chargedNano: settlement.chargedNano,
      generationMs: this.firstTokenAt ? performance.now() - this.firstTokenAt : 0,
    });
    return settlement;
  }

  /** llm.streaming.end, once the stream ended whole (after its settlement's llm.completion). */
  end(): void {
    const { events } = this.context.deps;
    const { account, key } = this.context.reservation;
    if (!events?.wants('llm.streaming.end', account.id)) return;
    const { requestId, model, userId } = this.context;
    const data = {
      requestId,
      streamId: this.streamId,
      totalChunks: this.chunks,
      model: model.id,
      userId: userId ?? account.id,
    };
    events.emit(llmEvent('llm.streaming.end', account.id, key.id, data));
  }
}
