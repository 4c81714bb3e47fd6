/** The `llm.*` events of spec 6.2: what a request did, for the webhooks of its account. */

export interface LlmTokens {
  prompt: number;
  completion: number;
  total: number;
}

export interface LlmError {
  code: string;
  message: string;
}

interface RequestData {
  requestId: string;
  conversationId?: string;
  userId: string;
  model: string;
  metadata?: Record<string, unknown>;
}

export interface LlmDataByType {
  'llm.completion': RequestData & { prompt: string; completion: string; tokens: LlmTokens };
  'llm.error': RequestData & { prompt: string; error: LlmError; tokens?: LlmTokens };
  'llm.streaming.start': RequestData & { streamId: string; prompt: string };
  'llm.streaming.chunk': { requestId: string; streamId: string; chunkIndex: number; content: string };
  'llm.streaming.end': { requestId: string; streamId: string; totalChunks: number; model: string; userId: string };
}

export type LlmEventType = keyof LlmDataByType;
export type LlmEventData = LlmDataByType[LlmEventType];

export const LLM_EVENT_TYPES: readonly LlmEventType[] = [
  'llm.completion',
  'llm.error',
  'llm.streaming.start',
  'llm.streaming.chunk',
  'llm.streaming.end',
];

/** The event of one type. */
export interface LlmEventOf<T extends LlmEventType> {
  type: T;
  accountId: string;
  keyId: string;
  /** Unix ms */
  at: number;
  data: LlmDataByType[T];
}

export type LlmEvent = { [T in LlmEventType]: LlmEventOf<T> }[LlmEventType];

export function llmEvent<T extends LlmEventType>(
  type: T,
  accountId: string,
  keyId: string,
  data: LlmDataByType[T],
): LlmEventOf<T> {
  return { type, accountId, keyId, at: Date.now(), data };
}

interface MessageLike {
  role: string;
  content?: unknown;
}

/** A text part's text: a string as it is, another scalar written out, anything else (or nothing) ''. */
function textOf(part: object): string {
  const text = 'text' in part ? part.text : undefined;
  if (typeof text === 'string') return text;
  return typeof text === 'number' || typeof text === 'boolean' || typeof text === 'bigint' ? String(text) : '';
}

/** The event's `prompt`: the text of the last user message (text parts joined), or '' when there is none. */
export function promptText(messages: readonly MessageLike[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]!;
    if (message.role !== 'user') continue;
    if (typeof message.content === 'string') return message.content;
    if (Array.isArray(message.content)) {
      return message.content
        .map((part: unknown) =>
          part && typeof part === 'object' && 'type' in part && part.type === 'text' ? textOf(part) : '',
        )
        .filter(Boolean)
        .join('\n');
    }
    return '';
  }
  return '';
}
