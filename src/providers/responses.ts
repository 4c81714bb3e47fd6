/**
 * The Responses side of the adapter contract (`POST /v1/responses`), for providers that serve OpenAI's Responses
 * API natively: the body passes through, and answers and events come back as OpenAI sent them.
 */

/** A Responses body, or one of its stream events or answers: JSON objects the gateway reads only in part. */
export type ResponsesJson = Record<string, unknown>;

export interface ResponsesCall {
  /** The client's body with `model` set to the upstream model name. */
  body: ResponsesJson;
  /** Aborted when the client goes away or the request times out. */
  signal: AbortSignal;
  requestId: string;
  /** Milliseconds the upstream may take to start answering. */
  timeoutMs: number;
}

/** The events that end a Responses stream: the Response in its final state, with its usage. */
export const RESPONSE_END_EVENTS: ReadonlySet<string> = new Set([
  'response.completed',
  'response.incomplete',
  'response.failed',
]);
