/**
 * One server-sent event as the gateway passes it along, from a relay or a translator to the HTTP edge, which
 * writes it (`event: <event>\ndata: <JSON of data>\n\n`) once. Anthropic's and the Responses API's streams name
 * every event; OpenAI's chat and completion streams name none and end with `data: [DONE]`.
 */
export interface StreamEvent {
  readonly event?: string | undefined;
  readonly data: object | '[DONE]';
}

/** The last event of an OpenAI chat or completion stream. */
export const DONE = { data: '[DONE]' } as const satisfies StreamEvent;

export function isDone(event: StreamEvent): boolean {
  return event.data === DONE.data;
}
