/** What a debit's ledger row tells about its request beyond money: where it went and how it ended. */
export interface RequestDetail {
  /** The path it came on (`/v1/chat/completions`). */
  endpoint: string | undefined;
  /** The id of the answer the client got (`chatcmpl-…`, `msg_…`, `resp_…`); undefined when it has none. */
  answerId: string | undefined;
  provider: string;
  /** From the request's arrival to its settlement (the answer complete, or cut). */
  latencyMs: number;
  /** From the request's arrival to the first token delivered; null when nothing was streamed. */
  firstTokenMs: number | null;
  /** As the client's protocol says it (`stop`, `length`, `end_turn`, `completed`, ...); `error` for a failed stream. */
  finishReason: string | null;
  streamed: boolean;
  /** The client went away before the answer was complete. */
  cancelled: boolean;
}

/** `ledger.detail`: the detail's JSON text (the endpoint and answer id have columns of their own). */
export interface StoredDetail {
  provider: string;
  latency_ms: number;
  first_token_ms: number | null;
  finish_reason: string | null;
  streamed: boolean;
  cancelled: boolean;
}

export function detailJson(detail: RequestDetail): string {
  const stored: StoredDetail = {
    provider: detail.provider,
    latency_ms: detail.latencyMs,
    first_token_ms: detail.firstTokenMs,
    finish_reason: detail.finishReason,
    streamed: detail.streamed,
    cancelled: detail.cancelled,
  };
  return JSON.stringify(stored);
}
