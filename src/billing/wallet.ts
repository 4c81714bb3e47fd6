/**
 * Reservations and settlement. Admission is decided from memory (no database round trip); settlement goes
 * through the group committer and resolves once the charge is durable.
 */
import { GatewayError } from '../errors/index.js';
import type { EventSink } from '../events/index.js';
import type { CommitResult, KeyRecord, Storage, WriteBatch } from '../storage/index.js';
import { AccountCache, available, utcDay, type AccountState } from './accounts.js';
import { admit, type Admission, type AdmissionInput } from './admission.js';
import { Committer } from './committer.js';
import { findCrossings } from './low-balance.js';
import type { Nano } from '../money/index.js';
import { costOf, type Price } from './pricing.js';
import { AutoRecharger, type PaymentProcessor } from './recharge.js';

export interface PlanLimits {
  requestsPerMinute: number;
  tokensPerMinute: number;
  dailyLimitNano: Nano | null;
}

export interface ReserveRequest
  extends Pick<AdmissionInput, 'price' | 'promptTokens' | 'requestedMaxTokens' | 'choices' | 'modelMaxTokens' | 'contextLength'> {
  account: AccountState;
  key: KeyRecord;
}

export interface SettleRequest {
  requestId: string;
  model: string;
  promptTokens: number;
  completionTokens: number;
}

export interface Settlement {
  /** What was debited, in nano-USD (0 for test keys). */
  chargedNano: Nano;
}

export interface WalletOptions {
  storage: Storage;
  limitsFor(account: AccountState): PlanLimits;
  defaultThresholdsNano: Nano[];
  events: EventSink;
  processor: PaymentProcessor;
  onError?: (error: unknown) => void;
}

export class Wallet {
  readonly accounts: AccountCache;
  private readonly committer: Committer;
  private readonly recharger: AutoRecharger;
  private openReservations = 0;

  constructor(private readonly options: WalletOptions) {
    this.accounts = new AccountCache(options.storage);
    this.recharger = new AutoRecharger(options.storage, options.processor, this.accounts, options.onError);
    this.committer = new Committer({
      storage: options.storage,
      onCommitted: (batch, result) => this.onCommitted(batch, result),
      ...(options.onError ? { onError: options.onError } : {}),
    });
  }

  get reservationsOpen(): number {
    return this.openReservations;
  }

  start(): void {
    this.accounts.startRefresh();
  }

  async stop(): Promise<void> {
    this.accounts.stop();
    await this.committer.drain();
    await this.recharger.idle();
    this.committer.close();
  }

  reserve(request: ReserveRequest): Reservation {
    const { account, key, ...sizing } = request;
    const free = key.environment === 'test';
    const limits = this.options.limitsFor(account);
    const keyState = keySpendOf(account, key);
    const admission = admit({
      ...sizing,
      balanceAvailable: available(account),
      dailyRemaining:
        limits.dailyLimitNano === null ? null : limits.dailyLimitNano - account.dailySpentNano - account.dailyReservedNano,
      keyRemaining: key.spendLimitNano === null ? null : key.spendLimitNano - keyState.spentNano - keyState.reservedNano,
      free,
    });
    account.reservedNano += admission.holdNano;
    account.dailyReservedNano += admission.holdNano;
    keyState.reservedNano += admission.holdNano;
    this.openReservations++;
    return new Reservation(this, account, key, request.price, admission);
  }

  /** Called by a Reservation exactly once. */
  async finish(reservation: Reservation, settle: SettleRequest | null): Promise<Settlement> {
    const { account, key, admission } = reservation;
    const keyState = keySpendOf(account, key);
    account.reservedNano -= admission.holdNano;
    account.dailyReservedNano -= admission.holdNano;
    keyState.reservedNano -= admission.holdNano;
    this.openReservations--;
    if (!settle) return { chargedNano: 0n };

    const usage = { day: utcDay(), environment: key.environment, model: settle.model };
    const keyUsed = { keyId: key.id, at: Date.now() };
    if (key.environment === 'test') {
      await this.committer.submit({
        usage: { accountId: account.id, ...usage, requests: 1, promptTokens: settle.promptTokens, completionTokens: settle.completionTokens, creditsNano: 0n },
        keyUsed,
      });
      return { chargedNano: 0n };
    }
    // Charge the actual cost, but never what other requests hold: estimation errors are the operator's, not theirs.
    const actual = costOf(reservation.price, settle.promptTokens, settle.completionTokens);
    const charge = actual < available(account) ? actual : available(account);
    account.pendingNano += charge;
    account.dailySpentNano += charge;
    keyState.spentNano += charge;
    const outcome = await this.committer.submit({
      entry: {
        accountId: account.id,
        kind: 'debit',
        amountNano: -charge,
        requestId: settle.requestId,
        keyId: key.id,
        model: settle.model,
        promptTokens: settle.promptTokens,
        completionTokens: settle.completionTokens,
        usage,
      },
      keyUsed,
    });
    return { chargedNano: -outcome.applied };
  }

  private onCommitted(batch: WriteBatch, result: CommitResult): void {
    batch.entries.forEach((entry, index) => {
      const state = this.accounts.peek(entry.accountId);
      if (entry.kind !== 'debit' || !state) return;
      state.pendingNano -= -entry.amountNano;
      const applied = result.applied[index]!;
      if (applied !== entry.amountNano) {
        // The database clamped the debit: give back the difference the memory view counted.
        state.dailySpentNano -= applied - entry.amountNano;
      }
      const after = result.balancesAfter[index]!;
      const thresholds = state.settings.lowBalanceThresholdsNano ?? this.options.defaultThresholdsNano;
      if (this.options.events.wants('credit.low_balance')) {
        for (const threshold of findCrossings(after - applied, after, thresholds)) {
          this.options.events.emit({
            type: 'credit.low_balance',
            created: Math.floor(Date.now() / 1000),
            accountId: entry.accountId,
            keyId: entry.keyId ?? null,
            balanceNano: after,
            thresholdNano: threshold,
          });
        }
      }
    });
    for (const [accountId, balance] of result.balances) this.accounts.confirm(accountId, balance.balanceNano, balance.version);
    for (const accountId of new Set(batch.entries.filter((e) => e.kind === 'debit').map((e) => e.accountId))) {
      const state = this.accounts.peek(accountId);
      if (state) this.recharger.consider(state);
    }
  }
}

export class Reservation {
  private done = false;

  constructor(
    private readonly wallet: Wallet,
    readonly account: AccountState,
    readonly key: KeyRecord,
    readonly price: Price,
    readonly admission: Admission,
  ) {}

  get maxTokens(): number {
    return this.admission.maxTokens;
  }

  /** Settles at the actual usage; resolves once the debit is durable. */
  settle(request: SettleRequest): Promise<Settlement> {
    if (this.done) throw new GatewayError('internal_error', { message: 'reservation settled twice' });
    this.done = true;
    return this.wallet.finish(this, request);
  }

  /** Gives the hold back without charging (the request failed before any output). */
  release(): void {
    if (this.done) return;
    this.done = true;
    void this.wallet.finish(this, null);
  }

  get settled(): boolean {
    return this.done;
  }
}

function keySpendOf(account: AccountState, key: KeyRecord): { spentNano: Nano; reservedNano: Nano } {
  let state = account.keySpend.get(key.id);
  if (!state) {
    state = { spentNano: key.spentNano, reservedNano: 0n };
    account.keySpend.set(key.id, state);
  }
  return state;
}
