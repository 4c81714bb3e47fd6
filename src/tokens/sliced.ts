/**
 * Large measures in slices. A request's measure (its prompt's tokens, by a synchronous walk over every text the body
 * sends upstream) could hold the event loop for seconds on a body of a few MB. `measureSliced` runs the measure
 * once recording the texts it would count (no tokenizer), counts those texts piece by piece in slices of a few
 * milliseconds that yield to other work, taking tenants' queues in turn, then runs the measure again on those
 * counts: the result is the synchronous measure's, and one tenant's large bodies delay only its own.
 */
import { GatewayError } from '../errors/index.js';
import { combinePieces, countPiece, textPieces, withCounts } from './count.js';

/** Work done between two yields to the event loop, when nothing else is waiting. */
const SLICE_MS = 4;
/**
 * The share of the event loop counting may take while other work keeps it busy: ordinary requests run first, and a
 * large body's count slows instead (cheap work before expensive work).
 */
const BUSY_SHARE = 0.05;
/** Between two turns, other work that took less than this means nothing else was waiting. */
const IDLE_GAP_MS = 0.1;
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
  // Parsing and validating the body ran in this task: the walk over it starts after other I/O has had its turn.
  await afterPendingIo();
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

/**
 * Resolves in the event loop's next check phase, after its poll phase has run the I/O callbacks waiting: an immediate
 * queued from I/O would run before them, in the same turn; one queued from an immediate runs in the next.
 */
function afterPendingIo(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)));
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
  /** When the last turn ended: the time until the next begins is other work's. */
  private turnEnded = 0;
  /** Milliseconds of counting earned by other work's time (at most a slice); below zero after a piece ran over. */
  private budget = SLICE_MS;

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

  /** One turn of the event loop: a slice of counting, as long as the budget allows (none while it is spent). */
  private readonly run = (): void => {
    const started = performance.now();
    const otherWorkMs = started - this.turnEnded;
    this.budget =
      otherWorkMs < IDLE_GAP_MS
        ? SLICE_MS
        : Math.min(SLICE_MS, this.budget + (otherWorkMs * BUSY_SHARE) / (1 - BUSY_SHARE));
    if (this.budget > 0) {
      this.slice(started + this.budget);
      this.budget -= performance.now() - started;
    }
    this.turnEnded = performance.now();
    if (this.queues.size > 0) setImmediate(this.run);
    else this.running = false;
  };

  /** Counts a piece at a time, queues in turn, until `deadline` (one piece at least). */
  private slice(deadline: number): void {
    do {
      const first = this.queues.entries().next();
      if (first.done) return;
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
  }
}

const counter = new SlicedCounter();
