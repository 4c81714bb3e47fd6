/** Server-sent events read from an upstream's answer while its bytes arrive. */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { MAX_ANSWER_BYTES, tooLarge } from './body.js';
import { UpstreamError } from './provider.js';

export type SseEvent = EventSourceMessage;

/** An event's data as JSON; data that is not JSON is a `protocol` UpstreamError naming the provider. */
export function eventDataJson(provider: string, data: string): unknown {
  try {
    return JSON.parse(data);
  } catch (cause) {
    throw new UpstreamError(provider, 'protocol', `${provider} sent a malformed stream event: ${data.slice(0, 200)}`, {
      cause,
    });
  }
}

/**
 * Splits bytes into events; comments and a partial trailing event are dropped. More than MAX_ANSWER_BYTES without
 * a complete event is an UpstreamError (the parser would buffer it all).
 */
export class SseReader {
  private readonly pending: SseEvent[] = [];
  private readonly parser = createParser({ onEvent: (event) => this.pending.push(event) });
  private readonly decoder = new TextDecoder();
  private unparsed = 0;

  constructor(private readonly provider: string) {}

  /** The events these bytes complete, in order (often none, sometimes several). */
  feed(bytes: Uint8Array | string): SseEvent[] {
    this.unparsed += bytes.length;
    this.parser.feed(typeof bytes === 'string' ? bytes : this.decoder.decode(bytes, { stream: true }));
    if (this.pending.length > 0) this.unparsed = 0;
    else if (this.unparsed > MAX_ANSWER_BYTES) throw tooLarge(this.provider);
    return this.pending.splice(0);
  }
}
