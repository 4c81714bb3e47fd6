/**
 * The signal that a request's client went away, handed down to the router and the providers' undici calls.
 *
 * Node's own AbortController is costly to create (far more than a plain EventTarget; the figures in
 * docs/performance.md), and every chat request needs one, so this is a plain object with the part of AbortSignal that its users touch: `aborted`, `reason`,
 * `throwIfAborted()` and abort listeners (undici, `timers/promises` and `events.once` all subscribe through
 * `addEventListener`). Listeners run once, when `abort` is first called.
 */
import type { ServerResponse } from 'node:http';

type Listener = Parameters<AbortSignal['addEventListener']>[1];

export class ClientSignal implements AbortSignal {
  aborted = false;
  reason: unknown = undefined;
  onabort: ((this: AbortSignal, event: Event) => unknown) | null = null;
  private listeners: Listener[] | undefined;

  abort(reason: unknown = new DOMException('The client closed the request', 'AbortError')): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const event = new Event('abort');
    const listeners = this.listeners ?? [];
    this.listeners = undefined;
    this.onabort?.call(this, event);
    for (const listener of listeners) {
      if (typeof listener === 'function') listener.call(this, event);
      else listener.handleEvent(event);
    }
  }

  throwIfAborted(): void {
    if (this.aborted) throw this.reason;
  }

  addEventListener(type: string, listener: Listener): void {
    if (type !== 'abort' || this.aborted) return;
    (this.listeners ??= []).push(listener);
  }

  removeEventListener(type: string, listener: Listener): void {
    if (type !== 'abort' || !this.listeners) return;
    const index = this.listeners.indexOf(listener);
    if (index >= 0) this.listeners.splice(index, 1);
  }

  dispatchEvent(event: Event): boolean {
    if (event.type === 'abort') this.abort();
    return true;
  }
}

/** The signal of one response: aborted when its connection closes before the answer was written out. */
export function clientSignalOf(res: ServerResponse): ClientSignal {
  const client = new ClientSignal();
  // A client that left while its body was read and parsed closed the response before this listener existed.
  if (res.destroyed || res.socket?.destroyed === true) client.abort();
  res.once('close', () => {
    if (!res.writableFinished) client.abort();
  });
  return client;
}

/** A header sent twice arrives in a list: its first value (the key's shape is checked by the gateway). */
export function singleHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
