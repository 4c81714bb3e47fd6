/**
 * The Messages side of the adapter contract (`POST /v1/messages`), for providers that serve Anthropic's Messages
 * API natively: the client's body passes through (cache_control, thinking blocks with their signatures, tool_use
 * ids kept), and answers and events come back as Anthropic sent them.
 */

/** A Messages body, answer or stream event: JSON objects the gateway reads only in part. */
export type MessagesJson = Record<string, unknown>;

export interface MessagesCall {
  /** The client's body with `model` set to the upstream model name. */
  body: MessagesJson;
  /** Aborted when the client goes away or the request times out. */
  signal: AbortSignal;
  requestId: string;
  /** Milliseconds the upstream may take to start answering. */
  timeoutMs: number;
  /** The client's protocol headers sent upstream as they are (`anthropic-beta`). */
  headers?: Readonly<Record<string, string>> | undefined;
}

/** One event of a Messages stream: its `event:` name and its parsed data (whose `type` is the same name). */
export interface MessagesEvent {
  event: string;
  data: MessagesJson;
}
