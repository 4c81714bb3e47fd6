/**
 * Checkpoints SQLite's WAL from a worker thread, so that no request waits for it.
 *
 * With `synchronous = NORMAL` a commit only appends to the WAL; the fsync comes with the checkpoint, which
 * SQLite runs inside the commit that crosses 1,000 WAL pages: about 8 ms (4 MB flushed to disk) on the main
 * thread, for every request in flight. Here a second connection, in a worker, runs a PASSIVE checkpoint (it never
 * blocks the writer) at most every CHECKPOINT_MS while commits come in, so each flush is small and off the
 * event loop. The writer's own automatic checkpoint stays on as the fallback if the worker is gone or behind.
 * The worker sleeps in `Atomics.wait` until told of a commit: an idle gateway costs no wake-ups.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/** Measured here: 10 ms kept p99 at one connection near its no-checkpoint floor; 50 ms did not (docs/performance.md). */
export const CHECKPOINT_MS = 10;

/** Slots of the shared Int32Array (checkpointLoop names them again: it cannot see this scope). */
const WRITTEN = 0;
const STOP = 1;
const DONE = 2;

interface WorkerData {
  file: string;
  /** better-sqlite3, resolved by the main thread (the worker runs from a string and has no module path). */
  driver: string;
  intervalMs: number;
  flags: Int32Array;
}

/** Runs in the worker, from its source text: it must not use anything from this module's scope. */
function checkpointLoop(data: WorkerData, load: (id: string) => unknown): void {
  const { flags, intervalMs } = data;
  const [written, stop, done] = [0, 1, 2];
  const Database = load(data.driver) as new (file: string) => { pragma(source: string): unknown; close(): void };
  const db = new Database(data.file);
  db.pragma('busy_timeout = 0');
  while (Atomics.load(flags, stop) === 0) {
    Atomics.wait(flags, written, 0);
    // Gather the commits of one interval; a stop request wakes this wait early.
    Atomics.wait(flags, stop, 0, intervalMs);
    Atomics.store(flags, written, 0);
    try {
      db.pragma('wal_checkpoint(PASSIVE)');
      Atomics.add(flags, done, 1);
    } catch {
      // Busy or failing: the next commit asks again, and the writer's automatic checkpoint is still there.
    }
  }
  db.close();
}

export class SqliteCheckpointer {
  private readonly flags = new Int32Array(new SharedArrayBuffer(3 * Int32Array.BYTES_PER_ELEMENT));
  private worker: Worker | undefined;
  private exited: Promise<unknown> | undefined;
  private stopped = false;

  constructor(
    private readonly file: string,
    private readonly onError: (error: unknown) => void = () => {},
  ) {}

  /** Called after each commit: wakes the worker (started on the first call) unless it is already due to run. */
  written(): void {
    if (this.stopped) return;
    if (!this.worker) this.worker = this.startWorker();
    if (Atomics.compareExchange(this.flags, WRITTEN, 0, 1) === 0) Atomics.notify(this.flags, WRITTEN);
  }

  /** Checkpoints the worker has run so far. */
  get checkpoints(): number {
    return Atomics.load(this.flags, DONE);
  }

  /** Stops the worker and waits until its connection is closed (before the writer's own connection closes). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (!this.worker) return;
    // Referenced again: an unreferenced worker is no reason to stay alive, and the process would exit mid-close.
    this.worker.ref();
    Atomics.store(this.flags, STOP, 1);
    Atomics.store(this.flags, WRITTEN, 1);
    Atomics.notify(this.flags, WRITTEN);
    Atomics.notify(this.flags, STOP);
    await this.exited;
  }

  private startWorker(): Worker {
    const data: WorkerData = {
      file: this.file,
      driver: createRequire(import.meta.url).resolve('better-sqlite3'),
      intervalMs: CHECKPOINT_MS,
      flags: this.flags,
    };
    const source = `const { workerData } = require('node:worker_threads');\n(${checkpointLoop.toString()})(workerData, require);`;
    const worker = new Worker(source, { eval: true, workerData: data });
    worker.on('error', (error) => this.onError(error));
    this.exited = new Promise((resolve) => worker.once('exit', resolve));
    // The process may exit without closing storage; the worker must not keep it alive.
    worker.unref();
    return worker;
  }
}
