/** Cutting a reply where OpenAI would stop generating (a stop sequence, the token limit) or at the sandbox's size cap. */
import { decode, encode } from 'gpt-tokenizer/encoding/o200k_base';
import { countTextTokens } from '../../tokens/index.js';

const NO_SPECIAL = { disallowedSpecial: new Set<string>() };

/** `text` up to (not including) the first occurrence of any stop sequence. */
export function cutAtStop(text: string, stops: string[]): string {
  let end = text.length;
  for (const stop of stops) {
    const at = text.indexOf(stop);
    if (at !== -1 && at < end) end = at;
  }
  return text.slice(0, end);
}

/** A token is rarely longer than this many characters: the first guess at how much text `limit` tokens take. */
const CHARS_PER_TOKEN_GUESS = 8;

/**
 * The longest prefix of `text` of at most `limit` tokens, cut on a token boundary. Only a head of the text is
 * tokenized (widened while it holds no more than `limit` tokens): the tokenizer runs on the event loop, and a long
 * echoed prompt cut to a few tokens must not cost the whole prompt's tokenizing.
 */
export function cutToTokens(text: string, limit: number): string {
  for (let window = Math.max(1, limit) * CHARS_PER_TOKEN_GUESS; ; window *= 4) {
    const head = text.length <= window ? text : text.slice(0, window);
    const tokens = encode(head, NO_SPECIAL);
    if (head === text && tokens.length <= limit) return text;
    if (head === text || tokens.length > limit) return tokenPrefix(text, tokens, limit);
  }
}

/**
 * The longest prefix of the first `limit` of `tokens` that is a true prefix of `text` and counts within the limit:
 * a token prefix may end inside a multi-byte character, the head's last tokens may differ from the whole text's,
 * and re-encoding a prefix may tokenize differently.
 */
function tokenPrefix(text: string, tokens: number[], limit: number): string {
  for (let count = Math.min(limit, tokens.length); count > 0; count--) {
    const prefix = decode(tokens.slice(0, count));
    if (text.startsWith(prefix) && countTextTokens(prefix) <= limit) return prefix;
  }
  return '';
}

/** The longest prefix of `text` of at most `maxBytes` UTF-8 bytes, cut on a character boundary. */
export function cutToBytes(text: string, maxBytes: number): string {
  // A UTF-8 character is at most 3 bytes per UTF-16 code unit: a text this short cannot exceed the cap.
  if (text.length * 3 <= maxBytes) return text;
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return text;
  let end = Math.max(0, maxBytes);
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--; // back off from inside a multi-byte character
  return bytes.subarray(0, end).toString('utf8');
}
