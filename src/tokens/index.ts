/**
 * Token counting where the upstream reports no usage (sandbox, cut streams, admission estimates).
 * One encoding (o200k_base, GPT-4o's) serves every model: counts are estimates for other vendors' tokenizers.
 */
import { countTokens as countO200k } from 'gpt-tokenizer/encoding/o200k_base';

/** The parts of an OpenAI chat message that carry tokens (structural, so any chat message type fits). */
export interface CountableMessage {
  role: string;
  content?: string | ReadonlyArray<{ type: string; text?: unknown }> | null;
  name?: string | undefined;
  tool_calls?: unknown[] | undefined;
  tool_call_id?: string | undefined;
}

const NO_SPECIAL = { disallowedSpecial: new Set<string>() };

/** Tokens charged per image part; OpenAI's high-detail 1024x1024 tile count, rounded up. */
export const TOKENS_PER_IMAGE = 1_000;
/** Framing tokens per message and per reply, as OpenAI counts them for chat models. */
const TOKENS_PER_MESSAGE = 3;
const TOKENS_PER_REPLY = 3;

export function countTextTokens(text: string): number {
  if (text.length === 0) return 0;
  return countO200k(text, NO_SPECIAL);
}

function messageTokens(message: CountableMessage): number {
  let tokens = TOKENS_PER_MESSAGE + countTextTokens(message.role);
  const { content } = message;
  if (typeof content === 'string') tokens += countTextTokens(content);
  else if (Array.isArray(content)) {
    for (const part of content) {
      if (part.type === 'text' && typeof part.text === 'string') tokens += countTextTokens(part.text);
      else if (part.type === 'image_url' || part.type === 'input_image') tokens += TOKENS_PER_IMAGE;
      else tokens += countTextTokens(JSON.stringify(part));
    }
  }
  if (message.name) tokens += 1 + countTextTokens(message.name);
  if (message.tool_calls) tokens += countTextTokens(JSON.stringify(message.tool_calls));
  if (message.tool_call_id) tokens += countTextTokens(message.tool_call_id);
  return tokens;
}

/** Prompt tokens of a chat request: messages plus tool definitions plus the reply primer. */
export function countPromptTokens(request: { messages: readonly CountableMessage[]; tools?: unknown[] | undefined }): number {
  let tokens = TOKENS_PER_REPLY;
  for (const message of request.messages) tokens += messageTokens(message);
  if (request.tools && request.tools.length > 0) tokens += countTextTokens(JSON.stringify(request.tools));
  return tokens;
}
