/**
 * Token counting where the upstream reports no usage (sandbox, cut streams, admission estimates).
 * One encoding (o200k_base, GPT-4o's) serves every model: counts are estimates for other vendors' tokenizers.
 */
import { countTextTokens, countsAreReal } from './count.js';

export { countTextTokens } from './count.js';
export { SMALL_BODY_BYTES, measureSliced, type SlicedOptions } from './sliced.js';

/** The parts of an OpenAI chat message that carry tokens (structural, so any chat message type fits). */
export type CountableMessage = {
  role: string;
  content?: string | ReadonlyArray<{ type: string; text?: unknown }> | null;
  name?: string | undefined;
  tool_calls?: unknown[] | undefined;
  tool_call_id?: string | undefined;
};

/** Tokens charged per image part; OpenAI's high-detail 1024x1024 tile count, rounded up. */
export const TOKENS_PER_IMAGE = 1_000;
/** Framing tokens per message and per reply, by OpenAI's count for chat models. */
const TOKENS_PER_MESSAGE = 3;
const TOKENS_PER_REPLY = 3;

/**
 * Prompt texts counted lately. A conversation sends its system prompt and its whole history again with every turn,
 * and an agent its tool definitions with every call: hashing a text to look it up is orders of magnitude faster
 * than tokenizing it, so a text that keeps coming back is tokenized once. Bounded by characters held, oldest out first.
 */
const recentCounts = new Map<string, number>();
let recentChars = 0;
const RECENT_CHARS_MAX = 2 * 1024 * 1024;

function promptTextTokens(text: string): number {
  const known = recentCounts.get(text);
  if (known !== undefined) return known;
  const tokens = countTextTokens(text);
  if (text.length <= RECENT_CHARS_MAX / 16 && countsAreReal()) {
    recentChars += text.length;
    for (const oldest of recentCounts.keys()) {
      if (recentChars <= RECENT_CHARS_MAX) break;
      recentCounts.delete(oldest);
      recentChars -= oldest.length;
    }
    recentCounts.set(text, tokens);
  }
  return tokens;
}

/** Roles are a handful of words: counted once each (one tokenizer call fewer per message). */
const roleTokens = new Map<string, number>();

function roleCount(role: string): number {
  let tokens = roleTokens.get(role);
  if (tokens === undefined) {
    tokens = countTextTokens(role);
    if (role.length <= 32 && roleTokens.size < 64 && countsAreReal()) roleTokens.set(role, tokens);
  }
  return tokens;
}

/** What a request forwards upstream, in prompt tokens. */
export interface PromptSize {
  /** Estimated prompt tokens (o200k): what admission holds and what is charged when the upstream reports none. */
  tokens: number;
}

/** Request fields that are never sent upstream unchanged (the router sets the model) or are counted apart. */
const REQUEST_FIELDS_APART = new Set(['messages', 'model', 'models', 'timeout_ms']);
/** Documented numeric and boolean parameters: a handful of bytes each, no prompt. */
const SCALAR_PARAMETERS = new Set([
  'stream',
  'max_tokens',
  'max_completion_tokens',
  'n',
  'temperature',
  'top_p',
  'presence_penalty',
  'frequency_penalty',
  'seed',
  'logprobs',
  'top_logprobs',
  'parallel_tool_calls',
]);
/** Documented option objects of scalars: no prompt either, while they hold only their documented fields. */
const OPTION_OBJECTS = new Map([['stream_options', new Set(['include_usage', 'include_obfuscation'])]]);
const MESSAGE_FIELDS_APART = new Set(['role', 'content']);
const TEXT_PART_FIELDS = new Set(['type', 'text']);
const IMAGE_PART_FIELDS = new Set(['type', 'image_url']);

function addText(size: PromptSize, text: string): void {
  size.tokens += promptTextTokens(text);
}

/**
 * Every field of `object` not in `apart`, the way the provider receives it: the name plus the value (a string
 * verbatim, anything else in JSON). Unknown fields are forwarded too, so they are counted too.
 */
function addFields(
  size: PromptSize,
  object: Readonly<Record<string, unknown>>,
  apart: ReadonlySet<string>,
  scalars?: ReadonlySet<string>,
): void {
  for (const name in object) {
    const value = object[name];
    if (apart.has(name) || value === undefined) continue;
    if (scalars && (scalars.has(name) ? value === null || typeof value !== 'object' : isOptionObject(name, value)))
      continue;
    size.tokens += 1;
    addText(size, typeof value === 'string' ? value : (JSON.stringify(value) ?? ''));
  }
}

function isOptionObject(name: string, value: unknown): boolean {
  const known = OPTION_OBJECTS.get(name);
  if (!known || typeof value !== 'object' || value === null) return false;
  const options: Array<[string, unknown]> = Object.entries(value);
  for (const [field, option] of options) {
    if (!known.has(field) || (option !== null && typeof option === 'object')) return false;
  }
  return true;
}

/** Array.isArray keeping the element type (it narrows a readonly array to `any[]`). */
function isList<T>(value: ReadonlyArray<T> | null | undefined): value is ReadonlyArray<T> {
  return Array.isArray(value);
}

function addMessage(size: PromptSize, message: CountableMessage): void {
  const framing = TOKENS_PER_MESSAGE + roleCount(message.role);
  size.tokens += framing;
  const { content } = message;
  if (typeof content === 'string') addText(size, content);
  else if (isList(content)) {
    for (const part of content) {
      if (part.type === 'text' && typeof part.text === 'string') {
        addText(size, part.text);
        addFields(size, part, TEXT_PART_FIELDS);
      } else if (part.type === 'image_url' || part.type === 'input_image') {
        size.tokens += TOKENS_PER_IMAGE;
        addFields(size, part, IMAGE_PART_FIELDS);
      } else addText(size, JSON.stringify(part));
    }
  }
  addFields(size, message, MESSAGE_FIELDS_APART);
}

/**
 * Prompt tokens of a chat request: every message with all its fields, every other field that goes upstream
 * (tools, functions, response_format schemas, tool_choice, unknown fields), plus the reply primer.
 */
export function measurePrompt(request: { messages: readonly CountableMessage[] }): PromptSize {
  const size: PromptSize = { tokens: TOKENS_PER_REPLY };
  for (const message of request.messages) addMessage(size, message);
  addFields(size, request, REQUEST_FIELDS_APART, SCALAR_PARAMETERS);
  return size;
}

export function countPromptTokens(request: { messages: readonly CountableMessage[] }): number {
  return measurePrompt(request).tokens;
}
