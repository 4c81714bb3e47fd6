/**
 * Events the gateway raises for the outside world. The webhook outbox (`webhooks/`) is the production sink;
 * tests may add their own. Emitters ask `wants(type, accountId)` first and build nothing when nobody listens.
 */
export type { LlmEvent, LlmEventType, LlmEventData, LlmTokens, LlmError } from './llm.js';
export { LLM_EVENT_TYPES, llmEvent, promptText } from './llm.js';
import type { NewDelivery } from '../storage/index.js';
import type { LlmEvent } from './llm.js';

export interface LowBalanceEvent {
  type: 'credit.low_balance';
  created: number;
  accountId: string;
  keyId: string | null;
  balanceNano: bigint;
  thresholdNano: bigint;
}

/** A card auto-recharge that took no money: declined, needing 3-D Secure, or the processor unreachable. */
export interface RechargeFailedEvent {
  type: 'credit.recharge_failed';
  /** Unix ms */
  at: number;
  accountId: string;
  rechargeId: string | null;
  amountNano: bigint;
  /** `card_declined`, `authentication_required`, `processor_unavailable`, `payment_method_required`, … */
  code: string;
  declineCode: string | null;
  message: string;
  paymentIntentId: string | null;
  consecutiveFailures: number;
  /** This failure turned auto-recharge off. */
  autoRechargeDisabled: boolean;
}

export type GatewayEvent = LowBalanceEvent | LlmEvent | RechargeFailedEvent;
export type GatewayEventType = GatewayEvent['type'];

export interface EventSink {
  /**
   * Whether anyone listens for this type (of this account, when given): nothing is built for events nobody
   * subscribed to. Must be cheap: it runs on the request path.
   */
  wants(type: GatewayEventType, accountId?: string): boolean;
  /** Best effort: the sink makes the event durable on its own, a moment later (a crash may lose it). */
  emit(event: GatewayEvent): void;
  /**
   * For an event caused by a database write (a debit): the outbox rows that make it durable, which the caller
   * writes in that write's own transaction, so the event is delivered exactly when the write committed.
   * A sink without `rows` gets such events through `emit` (see `durableRows`).
   */
  rows?(event: GatewayEvent): NewDelivery[];
  /** Rows from `rows` were committed (the webhook worker looks for them at once). */
  written?(): void;
}

/** The rows of `sink` for an event caused by a database write; a sink that keeps none takes it through `emit`. */
export function durableRows(sink: EventSink, event: GatewayEvent): NewDelivery[] {
  if (sink.rows) return sink.rows(event);
  sink.emit(event);
  return [];
}

export const NO_EVENTS: EventSink = { wants: () => false, emit: () => undefined };

/** Keeps events in memory; for tests. Listens for the given types (by default only `credit.low_balance`). */
export class MemoryEventSink<E extends GatewayEvent = LowBalanceEvent> implements EventSink {
  readonly events: E[] = [];
  private readonly types: ReadonlySet<GatewayEventType>;
  constructor(types: readonly E['type'][] = ['credit.low_balance'] as E['type'][]) {
    this.types = new Set(types);
  }
  wants(type: GatewayEventType): boolean {
    return this.types.has(type);
  }
  emit(event: GatewayEvent): void {
    if (this.listensFor(event)) this.events.push(event);
  }
  private listensFor(event: GatewayEvent): event is E {
    return this.types.has(event.type);
  }
}

/** Several sinks behind one: an event goes to each sink that wants it. */
export function fanOut(...sinks: EventSink[]): EventSink {
  if (sinks.length === 1) return sinks[0]!;
  return {
    wants: (type, accountId) => sinks.some((sink) => sink.wants(type, accountId)),
    emit: (event) => {
      const accountId = event.accountId;
      for (const sink of sinks) if (sink.wants(event.type, accountId)) sink.emit(event);
    },
    rows: (event) => sinks.flatMap((sink) => (sink.wants(event.type, event.accountId) ? durableRows(sink, event) : [])),
    written: () => sinks.forEach((sink) => sink.written?.()),
  };
}
