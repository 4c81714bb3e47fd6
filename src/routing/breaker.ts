/**
 * A circuit breaker per deployment: `failures` consecutive upstream faults open it for `cooldownMs`; then it is
 * half-open (traffic flows again; one more fault reopens it at once, a success closes it). Probes may close it
 * early. Plain fields, no timers: checking it costs a comparison.
 */
export type BreakerState = 'closed' | 'open' | 'half-open';

export class Breaker {
  private failures = 0;
  private openUntil = 0;
  /** Set while open or half-open; cleared by a success. */
  private tripped = false;
  reason = '';

  constructor(
    private readonly threshold: number,
    private readonly cooldownMs: number,
  ) {}

  state(now = Date.now()): BreakerState {
    if (!this.tripped) return 'closed';
    return now < this.openUntil ? 'open' : 'half-open';
  }

  /** Whether a request may go to the deployment now. */
  allows(now?: number): boolean {
    return !this.tripped || (now ?? Date.now()) >= this.openUntil;
  }

  /** Milliseconds until an open circuit is half-open (0 when it is not open). */
  remainingMs(now = Date.now()): number {
    return this.tripped ? Math.max(0, this.openUntil - now) : 0;
  }

  success(): void {
    if (this.failures === 0 && !this.tripped) return;
    this.failures = 0;
    this.tripped = false;
    this.reason = '';
  }

  /** Records an upstream fault; true when this fault opened (or reopened) the circuit. */
  failure(reason: string, now = Date.now()): boolean {
    this.failures++;
    this.reason = reason;
    if (this.tripped || this.failures >= this.threshold) {
      this.tripped = true;
      this.openUntil = now + this.cooldownMs;
      return true;
    }
    return false;
  }
}
