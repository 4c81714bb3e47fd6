/**
 * Reservations and settlement. Admission is decided from the credit state (memory, or Redis for replicas:
 * never a database round trip); settlement goes through the group committer and resolves once the charge is
 * durable.
 */
import { GatewayError } from '../errors/index.js';
import { durableRows, type EventSink, type GatewayEvent } from '../events/index.js';
import {
  type CommitResult,
  type EntryEvents,
  type KeyRecord,
  type LedgerEntryInput,
  type NewDelivery,
  type Storage,
  type WriteBatch,
} from '../storage/index.js';
import { AccountCache, utcDay, type AccountState } from './accounts.js';
import { admit, type Admission, type AdmissionInput } from './admission.js';
import { Committer } from './committer.js';
import { MemoryCreditState, type Budgets, type CreditState, type Hold } from './credit-state.js';
import { HoldWaiters, type HoldWaitOptions } from './hold-waiters.js';
import { findCrossings } from './low-balance.js';
import type { Nano } from '../money/index.js';
import type { PlanLimits } from './plans.js';
import {
  billingRecord,
  capUsage,
  completionTokensOf,
  priceUsage,
  promptTokensOf,
  type PriceSheet,
  type TokenUsage,
} from '../pricing/index.js';
import { detailJson, type RequestDetail } from './request-detail.js';
import { AutoRecharger, type RechargeOptions } from './recharge.js';

export interface ReserveRequest extends Pick<
  AdmissionInput,
  | 'price'
  | 'feesNano'
  | 'promptTokens'
  | 'promptCeiling'
  | 'requestedMaxTokens'
  | 'choices'
  | 'rateBound'
  | 'modelMaxTokens'
  | 'contextLength'
> {
  account: AccountState;
  key: KeyRecord;
  requestId: string;
  /** When the prices held were read (epoch ms); the settlement prices at the same moment. */
  at: number;
  /** The request's: a reservation waiting for other holds stops when the client leaves. */
  signal?: AbortSignal | undefined;
}

export interface SettleRequest {
  requestId: string;
  model: string;
  /** The answering model's prices in force when the request was admitted. */
  sheet: PriceSheet;
  /** What the provider reported (or tollgate counted), kind by kind. */
  usage: TokenUsage;
  /**
   * The request's event (llm.completion or llm.error), built from what was billed and written in the debit's
   * transaction: the answer that waits for the debit then implies the event will be delivered.
   */
  event?: (billed: Settlement) => GatewayEvent;
  /** Where the request went and how it ended, kept on its ledger row (GET /v1/generation). */
  detail?: RequestDetail;
}

export interface Settlement {
  /** What was debited, in nano-USD (0 for test keys). */
  chargedNano: Nano;
  /** The tokens billed: the reported usage, capped at what the request allowed. */
  promptTokens: number;
  completionTokens: number;
  /** The same, kind by kind; undefined when nothing was billed (a released hold). */
  usage?: TokenUsage;
}

/** An upstream reported more tokens than the request allowed; the charge was capped at the allowance. */
export interface UsageCapped {
  requestId: string;
  accountId: string;
  model: string;
  reported: { promptTokens: number; completionTokens: number };
  billed: { promptTokens: number; completionTokens: number };
}

export interface WalletOptions {
  storage: Storage;
  limitsFor(account: AccountState): PlanLimits;
  defaultThresholdsNano: Nano[];
  events: EventSink;
  /** Auto-recharge: the payment processors and the limits every recharge stays within. */
  recharge: RechargeOptions;
  /** Where holds live: in memory (one process, the default) or shared by replicas (Redis). */
  credits?: CreditState;
  /** How long, and how many at once per account, requests refused only because of other holds wait for them. */
  holdWaits?: Omit<HoldWaitOptions, 'pollMs'>;
  onError?: (error: unknown) => void;
  /** The events of a settlement could not be built (they are lost; the debit is written). */
  onEventError?: (error: unknown) => void;
  onUsageCapped?: (capped: UsageCapped) => void;
}

const NO_BUDGETS: Budgets = { balanceAvailable: 0n, dailyRemaining: null, keyRemaining: null };

/** A hold lost to concurrent requests is planned again with fresh budgets this many times. */
const RESERVE_ATTEMPTS = 4;
const HOLD_WAITS = { maxWaitMs: 10_000, perAccount: 8 };
/** The refusals a budget gives (admission.ts): only these may wait for other holds. */
const BUDGET_REFUSALS = new Set(['insufficient_credits', 'daily_limit_exceeded', 'key_limit_exceeded']);

export class Wallet {
  readonly accounts: AccountCache;
  private readonly credits: CreditState;
  private readonly committer: Committer;
  private readonly recharger: AutoRecharger;
  private readonly waiters: HoldWaiters;
  /** The hold and charge behind each debit waiting in the committer. */
  private readonly unwritten = new WeakMap<LedgerEntryInput, { hold: Hold; chargedNano: Nano }>();
  private openReservations = 0;

  constructor(private readonly options: WalletOptions) {
    this.accounts = new AccountCache(options.storage);
    this.credits = options.credits ?? new MemoryCreditState();
    this.waiters = new HoldWaiters({ ...(options.holdWaits ?? HOLD_WAITS), pollMs: this.credits.pollMs });
    this.recharger = new AutoRecharger(options.storage, options.recharge, this.accounts, options.onError);
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
    this.credits.start?.();
  }

  async stop(): Promise<void> {
    this.accounts.stop();
    await this.committer.drain();
    await this.recharger.idle();
    this.committer.close();
    await this.credits.close?.();
  }

  /**
   * Holds the request's worst case (its completion bound lowered to what every budget pays). Refused by a budget
   * only because of other requests' holds in flight, it waits for one of them to end and plans again, within
   * `holdWaits` (ADR 0061); then, or at once when the holds are not what is in the way, the budget's refusal.
   */
  async reserve(request: ReserveRequest): Promise<Reservation> {
    const { account, key, requestId } = request;
    const free = key.environment === 'test';
    const limits = this.options.limitsFor(account);
    let deadline: number | undefined;
    for (let attempt = 1; ; attempt++) {
      const mark = this.waiters.mark(account);
      const budgets = free ? NO_BUDGETS : await this.credits.budgets(account, key, limits);
      let admission: Admission;
      try {
        admission = admit(admissionInput(request, budgets, free));
      } catch (error) {
        if (!(await this.holdsInTheWay(error, request, limits))) throw error;
        deadline ??= Date.now() + this.waiters.maxWaitMs;
        if (!(await this.waiters.wait(account, mark, deadline, request.signal))) throw error;
        attempt = 0;
        continue;
      }
      const hold: Hold = { requestId, account, key, amountNano: admission.holdNano };
      if (free || (await this.credits.take(hold, limits))) {
        this.openReservations++;
        const ceiling = {
          promptTokens: request.contextLength,
          completionTokens: admission.maxTokens * request.choices,
        };
        return new Reservation(this, hold, admission, ceiling, request.at);
      }
      if (attempt >= RESERVE_ATTEMPTS) throw new GatewayError('insufficient_credits');
    }
  }

  /** A budget refused the request, and the same budgets without the holds in flight would admit it. */
  private async holdsInTheWay(error: unknown, request: ReserveRequest, limits: PlanLimits): Promise<boolean> {
    if (!(error instanceof GatewayError) || !BUDGET_REFUSALS.has(error.code) || this.waiters.maxWaitMs <= 0)
      return false;
    const budgets = await this.credits.budgetsWithoutHolds(request.account, request.key, limits);
    try {
      admit(admissionInput(request, budgets, false));
      return true;
    } catch {
      return false;
    }
  }

  /** Called by a Reservation exactly once. */
  async closeReservation(reservation: Reservation, settle: SettleRequest | null): Promise<Settlement> {
    const { hold } = reservation;
    const { account, key } = hold;
    this.openReservations--;
    if (!settle) {
      if (hold.amountNano > 0n) {
        await this.credits.release(hold);
        this.waiters.ended(account);
      }
      return { chargedNano: 0n, promptTokens: 0, completionTokens: 0 };
    }

    const billedUsage = this.billable(reservation, settle, account.id);
    const promptTokens = promptTokensOf(billedUsage);
    const completionTokens = completionTokensOf(billedUsage);
    const usage = { day: utcDay(), environment: key.environment, model: settle.model, keyId: key.id };
    const keyUsed = { keyId: key.id, at: Date.now() };
    if (key.environment === 'test') {
      const billed = { chargedNano: 0n, promptTokens, completionTokens, usage: billedUsage };
      const deliveries = settle.event
        ? this.rowsOf(() => durableRows(this.options.events, settle.event!(billed)))
        : undefined;
      await this.committer.submit({
        usage: { accountId: account.id, ...usage, requests: 1, promptTokens, completionTokens, creditsNano: 0n },
        keyUsed,
        ...(deliveries?.length ? { deliveries } : {}),
      });
      return billed;
    }
    // Charge the actual cost, but beyond the hold never what other requests hold nor past any limit the user set:
    // estimation errors are the operator's, not theirs.
    const priced = priceUsage(settle.sheet, billedUsage);
    const chargedNano = await this.credits.charge(hold, priced.costNano, this.options.limitsFor(account));
    this.waiters.ended(account);
    const entry: LedgerEntryInput = {
      accountId: account.id,
      kind: 'debit',
      amountNano: -chargedNano,
      requestId: settle.requestId,
      keyId: key.id,
      model: settle.model,
      promptTokens,
      completionTokens,
      billing: billingRecord(billedUsage, priced),
      usage,
    };
    if (settle.detail) {
      entry.endpoint = settle.detail.endpoint;
      entry.answerId = settle.detail.answerId;
      entry.detail = detailJson(settle.detail);
    }
    const events = this.entryEvents(account, key.id, settle.event, billedUsage);
    if (events) entry.events = events;
    this.unwritten.set(entry, { hold, chargedNano });
    const outcome = await this.committer.submit({ entry, keyUsed });
    return { chargedNano: -outcome.applied, promptTokens, completionTokens, usage: billedUsage };
  }

  /**
   * The events of a debit, built once the batch knows what it really moved: the request's event (its cost is the
   * debit) and the low-balance thresholds the debit crosses. Undefined when nobody listens.
   */
  private entryEvents(
    account: AccountState,
    keyId: string,
    event: SettleRequest['event'],
    usage: TokenUsage,
  ): EntryEvents | undefined {
    const sink = this.options.events;
    const thresholds = sink.wants('credit.low_balance', account.id)
      ? ((this.accounts.peek(account.id) ?? account).settings.lowBalanceThresholdsNano ??
        this.options.defaultThresholdsNano)
      : undefined;
    if (!event && !thresholds?.length) return undefined;
    return {
      needsBalance: thresholds !== undefined && thresholds.length > 0,
      rows: (applied, after) =>
        this.rowsOf(() => {
          const billed = {
            chargedNano: -applied,
            promptTokens: promptTokensOf(usage),
            completionTokens: completionTokensOf(usage),
            usage,
          };
          const rows = event ? durableRows(sink, event(billed)) : [];
          for (const thresholdNano of thresholds ? findCrossings(after - applied, after, thresholds) : []) {
            const created = Math.floor(Date.now() / 1000);
            rows.push(
              ...durableRows(sink, {
                type: 'credit.low_balance',
                created,
                accountId: account.id,
                keyId,
                balanceNano: after,
                thresholdNano,
              }),
            );
          }
          return rows;
        }),
    };
  }

  /** Builds outbox rows inside a money write: a failure there loses the events (reported), never the debit. */
  private rowsOf(build: () => NewDelivery[]): NewDelivery[] {
    try {
      return build();
    } catch (error) {
      this.options.onEventError?.(error);
      return [];
    }
  }

  /** The reported usage, capped at what the request allowed upstream (its completion bound, the context length). */
  private billable(reservation: Reservation, settle: SettleRequest, accountId: string): TokenUsage {
    const { ceiling } = reservation;
    const billed = capUsage(settle.usage, ceiling.promptTokens, ceiling.completionTokens);
    const reported = { promptTokens: promptTokensOf(settle.usage), completionTokens: completionTokensOf(settle.usage) };
    const allowed = { promptTokens: promptTokensOf(billed), completionTokens: completionTokensOf(billed) };
    if (allowed.promptTokens < reported.promptTokens || allowed.completionTokens < reported.completionTokens) {
      this.options.onUsageCapped?.({
        requestId: settle.requestId,
        accountId,
        model: settle.model,
        reported,
        billed: allowed,
      });
    }
    return billed;
  }

  private onCommitted(batch: WriteBatch, result: CommitResult): void {
    for (const [accountId, balance] of result.balances)
      this.accounts.confirm(accountId, balance.balanceNano, balance.version);
    batch.entries.forEach((entry, index) => {
      const written = this.unwritten.get(entry);
      if (!written) return;
      const balance = result.balances.get(entry.accountId)!;
      this.credits
        .confirmed(written.hold, written.chargedNano, result.applied[index]!, balance)
        .catch((error) => this.options.onError?.(error));
    });
    if (batch.deliveries?.length || batch.entries.some((e) => e.events)) this.options.events.written?.();
    for (const accountId of new Set(batch.entries.filter((e) => e.kind === 'debit').map((e) => e.accountId))) {
      const state = this.accounts.peek(accountId);
      if (state) this.recharger.consider(state);
    }
  }
}

/** What admission decides from: the request and the budgets. Built field by field: object spread of the request
 * is a measurable share of this hot path. */
function admissionInput(request: ReserveRequest, budgets: Budgets, free: boolean): AdmissionInput {
  return {
    price: request.price,
    feesNano: request.feesNano,
    promptTokens: request.promptTokens,
    promptCeiling: request.promptCeiling,
    requestedMaxTokens: request.requestedMaxTokens,
    choices: request.choices,
    rateBound: request.rateBound,
    modelMaxTokens: request.modelMaxTokens,
    contextLength: request.contextLength,
    balanceAvailable: budgets.balanceAvailable,
    dailyRemaining: budgets.dailyRemaining,
    keyRemaining: budgets.keyRemaining,
    keyLimit:
      request.key.spendLimitNano === null
        ? undefined
        : { limitNano: request.key.spendLimitNano, reset: request.key.limitReset },
    free,
  };
}

export class Reservation {
  private done = false;
  private onClosed: ((completionTokens: number) => void) | undefined;

  constructor(
    private readonly wallet: Wallet,
    readonly hold: Hold,
    readonly admission: Admission,
    /** The most tokens this request may be billed for. */
    readonly ceiling: { promptTokens: number; completionTokens: number },
    /** When the request was admitted: its prices are those in force then. */
    readonly admittedAt: number,
  ) {}

  get account(): AccountState {
    return this.hold.account;
  }

  get key(): KeyRecord {
    return this.hold.key;
  }

  get maxTokens(): number {
    return this.admission.maxTokens;
  }

  /** Calls `listener` once the reservation closes: with the completion tokens billed, or 0 when it is released. */
  whenClosed(listener: (completionTokens: number) => void): void {
    this.onClosed = listener;
  }

  /** Settles at the actual usage; resolves once the debit is durable. */
  settle(request: SettleRequest): Promise<Settlement> {
    if (this.done) throw new GatewayError('internal_error', { message: 'reservation settled twice' });
    this.done = true;
    return this.wallet.closeReservation(this, request).then((settlement) => {
      this.onClosed?.(settlement.completionTokens);
      return settlement;
    });
  }

  /** Gives the hold back without charging (the request failed before any output). */
  release(): void {
    if (this.done) return;
    this.done = true;
    this.onClosed?.(0);
    void this.wallet.closeReservation(this, null);
  }

  get settled(): boolean {
    return this.done;
  }
}
