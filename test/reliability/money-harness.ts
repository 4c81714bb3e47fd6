/**
 * The world of the money property test: real billing modules (Wallet, credit state, Committer) over a real
 * database, and "processes" that can crash. A crash drops a wallet's memory (holds, unwritten debits, cache)
 * without any goodbye: its storage handle dies, so nothing it still had queued reaches the database, and a
 * fresh wallet starts over the same database, as a restarted gateway would.
 */
import { AdminService } from '../../src/admin/index.js';
import { Wallet, paymentProcessors, planLimits, rechargeLimits, type Reservation } from '../../src/billing/index.js';
import { loadConfig, type Config } from '../../src/config/index.js';
import { NO_EVENTS } from '../../src/events/index.js';
import { openStorage, type KeyRecord, type Storage } from '../../src/storage/index.js';
import { createTestDatabase, type TestDatabase } from '../support/databases.js';

export type KeyKind = 'live' | 'test' | 'project';

export interface Proc {
  wallet: Wallet;
  /** Set by a crash: every write of this process fails from then on. */
  dead: boolean;
  /** The next N commits are written but their acknowledgement is lost (the writer sees an error). */
  loseAcks: number;
}

export interface Open {
  reservation: Reservation;
  proc: Proc;
  requestId: string;
  maxTokens: number;
  promptTokens: number;
}

export interface World {
  config: Config;
  storage: Storage;
  admin: AdminService;
  proc: Proc;
  spawn(): Proc;
  crash(): Proc;
  /** Waits for commits that were already under way when their process crashed (they land or fail). */
  quiesce(): Promise<void>;
  /** A fresh set of accounts for one property run: their ids and key records. */
  accounts(count: number): Promise<Array<{ id: string; keys: Record<KeyKind, KeyRecord> }>>;
  close(): Promise<void>;
}

export async function openWorld(dialect: 'sqlite' | 'postgres'): Promise<World> {
  const database: TestDatabase = await createTestDatabase(dialect);
  const config = loadConfig({
    env: {
      TOLLGATE_DATA_DIR: database.dataDir,
      ...(database.databaseUrl ? { DATABASE_URL: database.databaseUrl } : {}),
    },
    file: undefined,
  });
  const storage = await openStorage({ dataDir: config.storage.data_dir, databaseUrl: config.storage.database_url });
  const procs: Proc[] = [];
  const commits = new Set<Promise<unknown>>();
  let counter = 0;
  const world: World = {
    config,
    storage,
    // Top-ups and corrections come from "elsewhere" (admin API, CLI) and reach the live process as the app's
    // change bus would deliver them.
    admin: new AdminService(storage, config, 'secret', {
      onChange: async ({ accountId }) => {
        const record = accountId ? await storage.accounts.get(accountId) : undefined;
        if (record) world.proc.wallet.accounts.applyRecord(record);
      },
    }),
    proc: undefined as unknown as Proc,
    spawn() {
      const proc: Proc = { dead: false, loseAcks: 0, wallet: undefined as unknown as Wallet };
      proc.wallet = new Wallet({
        storage: crashable(storage, proc, commits),
        limitsFor: planLimits(config),
        defaultThresholdsNano: [],
        events: NO_EVENTS,
        recharge: { processors: paymentProcessors(), limits: rechargeLimits(config) },
        onError: () => undefined,
      });
      procs.push(proc);
      world.proc = proc;
      return proc;
    },
    crash() {
      const old = world.proc;
      old.dead = true;
      old.wallet.accounts.stop();
      return world.spawn();
    },
    async quiesce() {
      await Promise.allSettled([...commits]);
    },
    async accounts(count) {
      const made = [];
      for (let i = 0; i < count; i++) {
        const plan = i % 2 === 0 ? 'free' : 'pay_as_you_go';
        const { account, key } = await world.admin.createAccount({
          email: `p${++counter}-${Date.now()}@example.com`,
          plan,
        });
        const test = await world.admin.createKey(account.id, { environment: 'test' });
        const project = await world.admin.createKey(account.id, { permissions: 'project', spend_limit: 0.4 });
        if (i === 2)
          await world.admin.updateAccount(account.id, {
            billing: { processor: 'invoice', monthly_ceiling: 1000 },
            auto_recharge: { enabled: true, threshold: 1, amount: 2 },
          });
        made.push({ id: account.id, keys: { live: key.record, test: test.record, project: project.record } });
      }
      return made;
    },
    async close() {
      for (const proc of procs) {
        if (!proc.dead) await proc.wallet.stop();
        else proc.wallet.accounts.stop();
      }
      await storage.close();
      await database.drop();
    },
  };
  world.spawn();
  return world;
}

/** The same storage, except that a dead process can no longer write and acknowledgements can be lost. */
function crashable(storage: Storage, proc: Proc, commits: Set<Promise<unknown>>): Storage {
  const ledger = Object.create(storage.ledger) as Storage['ledger'];
  ledger.commit = async (batch) => {
    if (proc.dead) throw new Error('the process crashed');
    // A commit under way when the process dies still lands (or not) in the database, as with a real crash.
    const commit = storage.ledger.commit(batch);
    commits.add(commit);
    const result = await commit.finally(() => commits.delete(commit));
    if (proc.loseAcks > 0) {
      proc.loseAcks--;
      throw new Error('connection lost after COMMIT');
    }
    return result;
  };
  return { ...storage, ledger };
}
