import { EventEmitter, once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { ClientSignal } from '../../src/http/client-signal.js';

describe('ClientSignal, the request-scoped abort signal', () => {
  it('aborts what Node waits on with it: timers/promises, events.once', async () => {
    const signal = new ClientSignal();
    const waiting = sleep(10_000, undefined, { signal });
    const drain = once(new EventEmitter(), 'drain', { signal });
    setTimeout(() => signal.abort(), 10);
    await expect(waiting).rejects.toMatchObject({ name: 'AbortError' });
    await expect(drain).rejects.toMatchObject({ name: 'AbortError' });
    expect(signal.aborted).toBe(true);
    expect(() => signal.throwIfAborted()).toThrow('The client closed the request');
  });

  it('calls each listener once, not after it was removed, and none added after the abort', () => {
    const signal = new ClientSignal();
    const calls: string[] = [];
    const removed = () => calls.push('removed');
    signal.addEventListener('abort', () => calls.push('fn'));
    signal.addEventListener('abort', { handleEvent: (event) => calls.push(`object:${event.type}`) });
    signal.addEventListener('abort', removed);
    signal.removeEventListener('abort', removed);
    signal.onabort = () => calls.push('onabort');
    signal.abort();
    signal.abort();
    signal.addEventListener('abort', () => calls.push('late'));
    expect(calls).toEqual(['onabort', 'fn', 'object:abort']);
  });
});
