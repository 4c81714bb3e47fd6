/**
 * Events the gateway raises for the outside world. The webhooks issue plugs a durable outbox in behind this
 * interface; until then events go to whatever sink the app was built with (none by default).
 */
export interface LowBalanceEvent {
  type: 'credit.low_balance';
  created: number;
  accountId: string;
  keyId: string | null;
  balanceNano: bigint;
  thresholdNano: bigint;
}

export type GatewayEvent = LowBalanceEvent;

export interface EventSink {
  /** Whether anyone listens for this type: nothing is built for events nobody subscribed to. */
  wants(type: GatewayEvent['type']): boolean;
  emit(event: GatewayEvent): void;
}

export const NO_EVENTS: EventSink = { wants: () => false, emit: () => undefined };

/** Keeps events in memory; for tests and for a process that wants to look at what it raised. */
export class MemoryEventSink implements EventSink {
  readonly events: GatewayEvent[] = [];
  wants(): boolean {
    return true;
  }
  emit(event: GatewayEvent): void {
    this.events.push(event);
  }
}
