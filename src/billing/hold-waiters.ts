/**
 * Reservations waiting for other requests' holds on their account to end (ADR 0061): a request refused only because
 * of holds in flight waits, briefly and without any lock, for one of them to be released or charged, then plans
 * again. Woken in this process by `ended`; where holds are shared by replicas (Redis), another replica's hold ends
 * out of sight, so a waiter also looks again every `pollMs`. Bounded per account; a client that leaves frees its
 * place at once.
 */
import { GatewayError } from '../errors/index.js';
import type { AccountState } from './accounts.js';

export interface HoldWaitOptions {
  /** How long a reservation may wait in all; 0 turns waiting off. */
  maxWaitMs: number;
  /** Waiters an account may have at once; the next one is refused at once. */
  perAccount: number;
  /** Where holds end out of this process's sight: how often a waiter looks again. */
  pollMs?: number | undefined;
}

export class HoldWaiters {
  /** Per account (the cache's object): holds ended so far, so a wait started after an end is not missed. */
  private readonly ends = new WeakMap<AccountState, number>();
  private readonly waiting = new WeakMap<AccountState, Set<() => void>>();

  constructor(private readonly options: HoldWaitOptions) {}

  get maxWaitMs(): number {
    return this.options.maxWaitMs;
  }

  /** What `wait` compares with: take it before reading the budgets that refused. */
  mark(account: AccountState): number {
    return this.ends.get(account) ?? 0;
  }

  /** A hold of the account was released or charged: its waiters plan again. */
  ended(account: AccountState): void {
    this.ends.set(account, this.mark(account) + 1);
    for (const wake of this.waiting.get(account) ?? []) wake();
  }

  /**
   * Resolves true when a hold of the account ended since `mark` (or, with `pollMs`, when it is time to look again),
   * false when `deadline` passed or the account has its most waiters. Rejects when `signal` aborts: the client left.
   */
  wait(account: AccountState, mark: number, deadline: number, signal?: AbortSignal): Promise<boolean> {
    if (this.mark(account) !== mark) return Promise.resolve(true);
    const left = deadline - Date.now();
    let waiters = this.waiting.get(account);
    if (left <= 0 || (waiters?.size ?? 0) >= this.options.perAccount) return Promise.resolve(false);
    if (signal?.aborted) return Promise.reject(clientClosed());
    if (!waiters) this.waiting.set(account, (waiters = new Set()));
    const registered = waiters;
    return new Promise<boolean>((resolve, reject) => {
      const done = (outcome: boolean | GatewayError) => {
        clearTimeout(timer);
        registered.delete(wake);
        signal?.removeEventListener('abort', aborted);
        if (outcome instanceof GatewayError) reject(outcome);
        else resolve(outcome);
      };
      const wake = () => done(true);
      const aborted = () => done(clientClosed());
      const poll = this.options.pollMs;
      const timer = setTimeout(() => done(poll !== undefined && poll < left), Math.min(left, poll ?? left));
      registered.add(wake);
      signal?.addEventListener('abort', aborted, { once: true });
    });
  }
}

function clientClosed(): GatewayError {
  return new GatewayError('invalid_request', { message: 'The client closed the request' });
}
