/**
 * The in-memory view of accounts that admission decides from. The database stays the truth: every state is
 * loaded from it, refreshed every second (a higher `version` wins), and updated by each commit's result.
 */
import type { AccountRecord, AccountSettings, Storage } from '../storage/index.js';
import type { Nano } from '../money/index.js';

export interface AccountState {
  id: string;
  email: string;
  plan: string;
  settings: AccountSettings;
  /** Last balance confirmed by the database. */
  balanceNano: Nano;
  version: bigint;
  /** Worst-case cost held by admitted, unfinished requests. */
  reservedNano: Nano;
  /** Debits submitted to the committer and not yet confirmed. */
  pendingNano: Nano;
  /** UTC day `dailySpentNano` and `dailyReservedNano` belong to. */
  day: string;
  dailySpentNano: Nano;
  dailyReservedNano: Nano;
  /** Per key: spend confirmed or pending in the key's limit period `period` (`periodOf`), and held. */
  keySpend: Map<string, { period: string; spentNano: Nano; reservedNano: Nano }>;
  lastUsed: number;
}

let cachedSecond = -1;
let cachedDay = '';

/** `YYYY-MM-DD` in UTC; computed at most once a second (it is on every request's path). */
export function utcDay(now = Date.now()): string {
  const second = Math.floor(now / 1000);
  if (second !== cachedSecond) {
    cachedSecond = second;
    cachedDay = new Date(now).toISOString().slice(0, 10);
  }
  return cachedDay;
}

/** What the account can still pay: below zero only when the balance is (a refund or dispute took it there). */
export function available(state: AccountState): Nano {
  return state.balanceNano - state.reservedNano - state.pendingNano;
}

export class AccountCache {
  private readonly states = new Map<string, AccountState>();
  private readonly loading = new Map<string, Promise<AccountState | undefined>>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly storage: Storage,
    private readonly idleEvictMs = 10 * 60_000,
  ) {}

  async get(accountId: string): Promise<AccountState | undefined> {
    const state = this.states.get(accountId);
    if (state) {
      state.lastUsed = Date.now();
      rollDay(state);
      return state;
    }
    let pending = this.loading.get(accountId);
    if (!pending) {
      pending = this.load(accountId).finally(() => this.loading.delete(accountId));
      this.loading.set(accountId, pending);
    }
    return pending;
  }

  peek(accountId: string): AccountState | undefined {
    return this.states.get(accountId);
  }

  /** Applies a balance the database confirmed (commit result or refresh) unless a newer one is known. */
  confirm(accountId: string, balanceNano: Nano, version: bigint): void {
    const state = this.states.get(accountId);
    if (state && version > state.version) {
      state.balanceNano = balanceNano;
      state.version = version;
    }
  }

  /** Replaces plan and settings after a change made through this process. */
  applyRecord(record: AccountRecord): void {
    const state = this.states.get(record.id);
    if (!state) return;
    state.plan = record.plan;
    state.settings = record.settings;
    this.confirm(record.id, record.balanceNano, record.version);
  }

  startRefresh(intervalMs = 1000): void {
    this.timer = setInterval(() => void this.refresh().catch(() => undefined), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** Picks up changes made elsewhere (CLI, other replicas, admin writes) and forgets idle accounts. */
  async refresh(): Promise<void> {
    const now = Date.now();
    for (const [id, state] of this.states) {
      const idle = state.reservedNano === 0n && state.pendingNano === 0n && now - state.lastUsed > this.idleEvictMs;
      if (idle) this.states.delete(id);
    }
    const ids = [...this.states.keys()];
    if (ids.length === 0) return;
    const rows = await this.storage.accounts.balances(ids);
    for (const row of rows) {
      const state = this.states.get(row.id);
      if (!state || row.version <= state.version) continue;
      const record = await this.storage.accounts.get(row.id);
      if (record) this.applyRecord(record);
    }
  }

  private async load(accountId: string): Promise<AccountState | undefined> {
    const record = await this.storage.accounts.get(accountId);
    if (!record) return undefined;
    const day = utcDay();
    const today = await this.storage.usage.totals(accountId, 'live', day, day);
    const existing = this.states.get(accountId);
    if (existing) return existing;
    const state: AccountState = {
      id: record.id,
      email: record.email,
      plan: record.plan,
      settings: record.settings,
      balanceNano: record.balanceNano,
      version: record.version,
      reservedNano: 0n,
      pendingNano: 0n,
      day,
      dailySpentNano: today.creditsNano,
      dailyReservedNano: 0n,
      keySpend: new Map(),
      lastUsed: Date.now(),
    };
    this.states.set(accountId, state);
    return state;
  }
}

function rollDay(state: AccountState): void {
  const today = utcDay();
  if (state.day !== today) {
    state.day = today;
    state.dailySpentNano = 0n;
  }
}
