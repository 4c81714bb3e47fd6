/**
 * Group commit: settlements arriving within one turn of the event loop are written in one transaction.
 * Each caller's promise resolves once its entry is durable, so a charge is on disk before its response ends,
 * while the database sees one transaction per batch instead of one per request.
 */
import { withSpan } from '../observability/index.js';
import type { CommitResult, LedgerEntryInput, NewDelivery, Storage, UsageDelta, WriteBatch } from '../storage/index.js';

export interface CommitOutcome {
  /** The amount actually applied (negative for debits); 0n for items without a ledger entry. */
  applied: bigint;
}

/** What one caller writes: a ledger entry (its events ride on it), usage without an entry, outbox rows of its own. */
export interface CommitItem {
  entry?: LedgerEntryInput;
  usage?: UsageDelta;
  keyUsed?: { keyId: string; at: number };
  deliveries?: NewDelivery[];
}

interface Item extends CommitItem {
  resolve(outcome: CommitOutcome): void;
  reject(error: Error): void;
  /** When the caller stops waiting (the item itself stays queued until written). */
  deadline: number;
  settled: boolean;
  /** It was in a batch that failed (the writer then checks the ledger for its debit). */
  retried: boolean;
}

export interface CommitterOptions {
  storage: Storage;
  /** Called after every successful transaction, before callers resume (balances, crossings, recharges). */
  onCommitted?: (batch: WriteBatch, result: CommitResult) => void;
  /** A caller stops waiting after this long (its item stays queued and is retried until written). */
  waitTimeoutMs?: number;
  onError?: (error: unknown) => void;
}

export class Committer {
  private queue: Item[] = [];
  private inFlight: Item[] = [];
  private flushing = false;
  private watchdog: NodeJS.Timeout | undefined;
  private scheduled = false;
  private retryDelayMs = 50;
  private closed = false;

  constructor(private readonly options: CommitterOptions) {}

  submit(item: CommitItem): Promise<CommitOutcome> {
    if (this.closed) return Promise.reject(new Error('committer is closed'));
    return new Promise<CommitOutcome>((resolve, reject) => {
      const deadline = Date.now() + (this.options.waitTimeoutMs ?? 10_000);
      this.queue.push({
        entry: item.entry,
        usage: item.usage,
        keyUsed: item.keyUsed,
        deliveries: item.deliveries,
        resolve,
        reject,
        deadline,
        settled: false,
        retried: false,
      });
      this.schedule();
      this.watch();
    });
  }

  /** Writes everything queued, retrying until the database takes it or `deadlineMs` passes. */
  async drain(deadlineMs = 10_000): Promise<void> {
    const until = Date.now() + deadlineMs;
    while ((this.queue.length > 0 || this.flushing) && Date.now() < until) {
      if (!this.flushing) await this.flush();
      else await new Promise((r) => setTimeout(r, 5));
    }
  }

  close(): void {
    this.closed = true;
    if (this.watchdog) clearInterval(this.watchdog);
  }

  private schedule(): void {
    if (this.scheduled || this.flushing) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    if (this.flushing || this.queue.length === 0) return;
    this.flushing = true;
    const items = this.queue;
    this.inFlight = items;
    this.queue = [];
    const withEntry = items.filter((i) => i.entry);
    const batch: WriteBatch = {
      entries: withEntry.map((i) => i.entry!),
      usage: items.flatMap((i) => (i.usage ? [i.usage] : [])),
      keysUsed: items.flatMap((i) => (i.keyUsed ? [i.keyUsed] : [])),
      retried: items.some((i) => i.retried),
    };
    if (items.some((i) => i.deliveries)) batch.deliveries = items.flatMap((i) => i.deliveries ?? []);
    try {
      const result = await withSpan(
        'db commit',
        { 'tollgate.batch.entries': batch.entries.length, 'tollgate.batch.usage': batch.usage?.length ?? 0 },
        () => this.options.storage.ledger.commit(batch),
      );
      this.retryDelayMs = 50;
      // The batch is durable now: a failure after this point must never put it back in the queue (that would
      // write it twice), so the callback's errors are only reported.
      try {
        this.options.onCommitted?.(batch, result);
      } catch (error) {
        this.options.onError?.(error);
      }
      withEntry.forEach((item, index) => settle(item, { applied: result.applied[index]! }));
      for (const item of items) if (!item.entry) settle(item, { applied: 0n });
    } catch (error) {
      this.options.onError?.(error);
      for (const item of items) item.retried = true;
      this.queue = items.concat(this.queue);
      const delay = this.retryDelayMs;
      this.retryDelayMs = Math.min(this.retryDelayMs * 2, 2_000);
      setTimeout(() => this.schedule(), delay).unref();
    } finally {
      this.inFlight = [];
      this.flushing = false;
      if (this.queue.length > 0 && this.retryDelayMs === 50) this.schedule();
    }
  }

  /** One timer for all waiters (not one per request): callers whose deadline passed stop waiting. */
  private watch(): void {
    if (this.watchdog) return;
    this.watchdog = setInterval(() => {
      const now = Date.now();
      for (const item of [...this.queue, ...this.inFlight]) {
        if (!item.settled && item.deadline <= now) {
          item.settled = true;
          item.reject(new Error('the database did not confirm the write in time'));
        }
      }
      if (this.queue.length === 0 && this.inFlight.length === 0) {
        clearInterval(this.watchdog);
        this.watchdog = undefined;
      }
    }, 250);
    this.watchdog.unref();
  }
}

function settle(item: Item, outcome: CommitOutcome): void {
  if (item.settled) return;
  item.settled = true;
  item.resolve(outcome);
}
