/**
 * Checkpoints SQLite's WAL from a worker thread, so that no request waits for it.
 *
 * With `synchronous = NORMAL` a commit only appends to the WAL; the fsync comes with the checkpoint, which
 * SQLite runs inside the commit that crosses 1,000 WAL pages: a 4 MB flush to disk on the main thread, which
 * every request in flight waits for. Here a second connection, in a worker, runs a PASSIVE checkpoint (it never
 * blocks the writer) CHECKPOINT_MS after a commit, so each flush is small and off the event loop. The worker
 * sleeps in `Atomics.wait` until told of a commit: an idle gateway costs it one wake-up, IDLE_RELEASE_MS after the
 * last commit.
 *
 * The WAL is restarted only once per RESTART_COMMITS commits. The first commit after a checkpoint that caught up
 * with the whole WAL restarts it, and SQLite fsyncs the new header inside that commit, on the event loop: with a
 * checkpoint CHECKPOINT_MS after any commit, that was every commit of a gateway whose requests come further apart,
 * and many commits a second under load (docs/adr/0037-money-writers-outside-kysely.md). A third connection holds a read
 * transaction begun just before each checkpoint: a writer cannot restart the WAL while a reader uses it, and the
 * checkpoint still copies everything up to that reader's snapshot. The worker lets go of it once
 * RESTART_COMMITS commits have been written since the last restart, or the WAL holds RESTART_PAGES pages (large
 * batches), until the WAL has been restarted.
 */
import type { closeSync, openSync, readSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * Short enough that each flush stays small: a longer wait let the p99 at one connection rise above its floor
 * without checkpoints (docs/adr/0037-money-writers-outside-kysely.md; the figures in docs/performance.md).
 */
export const CHECKPOINT_MS = 10;
/** Commits between WAL restarts (each one fsync on the event loop), at most about this many pages each. */
export const RESTART_COMMITS = 100;
/** Or once the WAL holds this many pages, whatever the commits (~16 MB; the writer's own checkpoint is far above). */
export const RESTART_PAGES = 4_000;
/** After this long without a commit the worker ends its read transaction (no reader holds the WAL while idle). */
export const IDLE_RELEASE_MS = 1_000;
/** The writer's own `wal_autocheckpoint` (SQLite's default is 1,000 pages): far above what the worker lets the WAL reach. */
export const WRITER_AUTOCHECKPOINT_PAGES = 10_000;

/** Slots of the shared Int32Array (checkpointLoop names them again: it cannot see this scope). */
const WRITTEN = 0;
const STOP = 1;
const DONE = 2;

export interface CheckpointPolicy {
  intervalMs: number;
  restartCommits: number;
  restartPages: number;
  idleMs: number;
}

interface WorkerData extends CheckpointPolicy {
  file: string;
  /** better-sqlite3, resolved by the main thread (the worker runs from a string and has no module path). */
  driver: string;
  flags: Int32Array;
}

interface Connection {
  pragma(source: string): unknown;
  prepare(source: string): { run(): unknown; get(): unknown };
  readonly inTransaction: boolean;
  close(): void;
}

/** Runs in the worker, from its source text: it must not use anything from this module's scope. */
function checkpointLoop(data: WorkerData, load: (id: string) => unknown): void {
  const { flags, intervalMs, restartCommits, restartPages, idleMs } = data;
  const [written, stop, done] = [0, 1, 2];
  const fs = load('node:fs') as { openSync: typeof openSync; readSync: typeof readSync; closeSync: typeof closeSync };
  const Database = load(data.driver) as new (file: string) => Connection;
  const db = new Database(data.file);
  db.pragma('busy_timeout = 0');
  const reader = new Database(data.file);
  const [begin, read, end] = ['BEGIN', 'SELECT 1 FROM sqlite_schema LIMIT 1', 'COMMIT'].map((sql) =>
    reader.prepare(sql),
  );
  const hold = () => {
    begin!.run();
    read!.get();
  };
  const release = () => {
    if (reader.inTransaction) end!.run();
  };
  // The WAL header's checkpoint sequence number, which each restart increments (undefined if unreadable).
  const header = Buffer.alloc(32);
  const restarts = (): number | undefined => {
    try {
      const fd = fs.openSync(`${data.file}-wal`, 'r');
      try {
        return fs.readSync(fd, header, 0, 32, 0) === 32 ? header.readUInt32BE(12) : undefined;
      } finally {
        fs.closeSync(fd);
      }
    } catch {
      return undefined;
    }
  };
  let lastRestart: number | undefined;
  let sinceRestart = 0;
  // Pages in the WAL at the last checkpoint.
  let walPages = 0;
  while (Atomics.load(flags, stop) === 0) {
    // Idle for a while: let go of the WAL, so that the next commit may restart it.
    if (Atomics.wait(flags, written, 0, idleMs) === 'timed-out') {
      release();
      Atomics.wait(flags, written, 0);
    }
    // Gather the commits of one interval; a stop request wakes this wait early.
    Atomics.wait(flags, stop, 0, intervalMs);
    const restart = restarts();
    if (restart !== lastRestart) [lastRestart, sinceRestart] = [restart, 0];
    sinceRestart += Atomics.exchange(flags, written, 0);
    try {
      release();
      if (sinceRestart < restartCommits && walPages < restartPages) hold();
      const [result] = db.pragma('wal_checkpoint(PASSIVE)') as Array<{ log: number }>;
      walPages = result?.log ?? 0;
      Atomics.add(flags, done, 1);
    } catch {
      // Busy or failing: the next commit asks again, and the writer's automatic checkpoint is still there.
    }
  }
  release();
  reader.close();
  db.close();
}

export class SqliteCheckpointer {
  private readonly flags = new Int32Array(new SharedArrayBuffer(3 * Int32Array.BYTES_PER_ELEMENT));
  private worker: Worker | undefined;
  private exited: Promise<unknown> | undefined;
  private stopped = false;
  private readonly policy: CheckpointPolicy;

  constructor(
    private readonly file: string,
    private readonly onError: (error: unknown) => void = () => {},
    policy: Partial<CheckpointPolicy> = {},
  ) {
    this.policy = {
      intervalMs: CHECKPOINT_MS,
      restartCommits: RESTART_COMMITS,
      restartPages: RESTART_PAGES,
      idleMs: IDLE_RELEASE_MS,
      ...policy,
    };
  }

  /** Called after each commit: counts it, and wakes the worker (started on the first call) unless it is already due to run. */
  written(): void {
    if (this.stopped) return;
    if (!this.worker) this.worker = this.startWorker();
    if (Atomics.add(this.flags, WRITTEN, 1) === 0) Atomics.notify(this.flags, WRITTEN);
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
      ...this.policy,
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
