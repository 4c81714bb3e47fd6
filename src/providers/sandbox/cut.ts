/** Cutting a reply where OpenAI would stop generating: at a stop sequence or at the token limit. */
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

/** The longest prefix of `text` of at most `limit` tokens, cut on a token boundary. */
export function cutToTokens(text: string, limit: number): string {
  const tokens = encode(text, NO_SPECIAL);
  if (tokens.length <= limit) return text;
  // A token prefix may end inside a multi-byte character, and re-encoding a prefix may tokenize differently:
  // back off until the decoded prefix is a true prefix of the text and still counts within the limit.
  for (let count = limit; count > 0; count--) {
    const prefix = decode(tokens.slice(0, count));
    if (text.startsWith(prefix) && countTextTokens(prefix) <= limit) return prefix;
  }
  return '';
}
