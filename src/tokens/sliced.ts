/**
 * Large measures in slices. A request's measure (its prompt's tokens, by a synchronous walk over every text the body
 * sends upstream) could hold the event loop for seconds on a body of a few MB. `measureSliced` runs the measure
 * once recording the texts it would count (no tokenizer), counts those texts piece by piece in slices of a few
 * milliseconds that yield to other work, taking tenants' queues in turn, then runs the measure again on those
 * counts: the result is the synchronous measure's, and one tenant's large bodies delay only its own.
 */
import { GatewayError } from '../errors/index.js';
import { combinePieces, countPiece, textPieces, withCounts } from './count.js';

/** Work done between two yields to the event loop. */
const SLICE_MS = 4;
/** Texts still to count up to this many characters are counted at once (milliseconds of tokenizer at worst). */
const INLINE_CHARS = 8 * 1024;
/** A body up to this many bytes has no more characters of text: it is measured at once. */
export const SMALL_BODY_BYTES = INLINE_CHARS;

export interface SlicedOptions {
  /** The tenant whose turn the slices take. */
  queue: string;
  /** Aborted when the client goes away: the count stops, and the measure rejects. */
  signal?: AbortSignal | undefined;
  /** The body's size in bytes, when known: a small body is measured at once (it has fewer characters). */
  bytes?: number | undefined;
  /** Runs first when the body is not known to be small: a cheap refusal, such as a rate limit. */
  whenLarge?: (() => Promise<void>) | undefined;
}

/**
 * `measure`'s result, with the tokenizer's work on texts not counted lately done in slices. A measure that refuses
 * the request refuses it before any text is counted.
 */
export async function measureSliced<T>(measure: () => T, options: SlicedOptions): Promise<T> {
  const { queue, signal, bytes, whenLarge } = options;
  if (bytes !== undefined && bytes <= INLINE_CHARS) return measure();
  await whenLarge?.();
  // Parsing and validating the body ran in this task: the walk over it starts in the next.
  await new Promise(setImmediate);
  const texts = new Set<string>();
  let chars = 0;
  withCounts(
    (text) => {
      if (!texts.has(text)) chars += text.length;
      texts.add(text);
      return 0;
    },
    measure,
    false,
  );
  if (chars <= INLINE_CHARS) return measure();
  const counts = await counter.count([...texts], queue, signal);
  return withCounts((text) => counts.get(text), measure, true);
}

/** One request's texts, counted a piece per step. */
class CountJob {
  readonly counts = new Map<string, number>();
  private readonly texts: Iterator<string>;
  private text: string | undefined;
  private pieces: Iterator<string> | undefined;
  private tokens = 0;

  constructor(
    texts: readonly string[],
    readonly signal: AbortSignal | undefined,
    readonly resolve: (counts: Map<string, number>) => void,
    readonly reject: (error: unknown) => void,
  ) {
    this.texts = texts[Symbol.iterator]();
  }

  /** Counts one piece; true when every text is counted. */
  step(): boolean {
    for (;;) {
      if (this.text === undefined) {
        const next = this.texts.next();
        if (next.done) return true;
        this.text = next.value;
        this.pieces = textPieces(next.value);
        this.tokens = 0;
      }
      const piece = this.pieces!.next();
      if (!piece.done) {
        this.tokens += countPiece(piece.value);
        return false;
      }
      this.counts.set(this.text, combinePieces(this.text, this.tokens));
      this.text = undefined;
    }
  }
}

/** The queues of jobs, one per tenant, served a piece at a time in turn. */
class SlicedCounter {
  /** Insertion order is the turn: a queue served goes to the back. */
  private readonly queues = new Map<string, CountJob[]>();
  private running = false;

  count(texts: readonly string[], queue: string, signal?: AbortSignal): Promise<Map<string, number>> {
    return new Promise((resolve, reject) => {
      const job = new CountJob(texts, signal, resolve, reject);
      const jobs = this.queues.get(queue);
      if (jobs) jobs.push(job);
      else this.queues.set(queue, [job]);
      if (!this.running) {
        this.running = true;
        setImmediate(this.run);
      }
    });
  }

  private readonly run = (): void => {
    const deadline = performance.now() + SLICE_MS;
    do {
      const first = this.queues.entries().next();
      if (first.done) break;
      const [queue, jobs] = first.value;
      const job = jobs[0]!;
      this.queues.delete(queue);
      if (job.signal?.aborted) {
        jobs.shift();
        job.reject(new GatewayError('invalid_request', { message: 'The client closed the request' }));
      } else if (job.step()) {
        jobs.shift();
        job.resolve(job.counts);
      }
      if (jobs.length > 0) this.queues.set(queue, jobs);
    } while (performance.now() < deadline);
    if (this.queues.size > 0) setImmediate(this.run);
    else this.running = false;
  };
}

const counter = new SlicedCounter();
