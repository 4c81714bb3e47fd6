/** What every metered endpoint gets from HTTP, and what it gives back. */
import type { StreamEvent } from '../wire/index.js';

export interface RequestInput {
  authorization: string | undefined;
  /** The client's address (Fastify's `request.ip`: behind `server.trust_proxy`, the proxy's word): `allowed_ips`. */
  clientIp: string | undefined;
  /** The parsed JSON body, not yet validated. */
  body: unknown;
  /** The body's size in bytes, when known (its Content-Length): a small body is measured at once. */
  bodyBytes?: number | undefined;
  /** The `Idempotency-Key` header, if any. */
  idempotencyKey?: string | undefined;
  requestId: string;
  /** The path the request came on (`/v1/chat/completions`): its ledger row's `endpoint`. */
  endpoint?: string | undefined;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
  /** Headers of the client's own protocol that a native pass-through sends upstream as they are (`anthropic-beta`). */
  forwardHeaders?: Readonly<Record<string, string>> | undefined;
  /** Receives the request's outcome for the access log (ids, model, provider, cost; never the key). */
  log: (fields: Record<string, unknown>) => void;
}

/** An endpoint's answer: a JSON body, or a stream of events that HTTP writes as server-sent events. */
export type Answer<B> =
  | { kind: 'json'; headers: Record<string, string>; body: B }
  | { kind: 'stream'; headers: Record<string, string>; events: AsyncGenerator<StreamEvent, void, undefined> };
