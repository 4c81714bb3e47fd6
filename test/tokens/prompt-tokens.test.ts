/** Prompt counting: a text that comes back (a system prompt, a conversation's history) is tokenized once. */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { countPromptTokens, countTextTokens } from '../../src/tokens/index.js';

/** Random base64 letters: the tokenizer's slow end (about 0.1 MB/s here). */
const slowText = (chars: number) => randomBytes(chars).toString('base64').slice(0, chars);
/** Words with numbers in them: ordinary prose speed, and a different text every time. */
const proseText = (chars: number) => {
  let text = '';
  while (text.length < chars) text += `word${Math.floor(Math.random() * 1e6)} and some more of it. `;
  return text.slice(0, chars);
};
const request = (system: string, user: string) => ({
  messages: [
    { role: 'system', content: system },
    { role: 'user', content: [{ type: 'text', text: user }] },
  ],
});

function timed<T>(fn: () => T): { value: T; ms: number } {
  const start = performance.now();
  const value = fn();
  return { value, ms: performance.now() - start };
}

describe('countPromptTokens', () => {
  it('gives a repeated prompt the same count, without tokenizing its texts again', () => {
    const system = slowText(96 * 1024);
    const first = timed(() => countPromptTokens(request(system, 'first question')));
    // The same system prompt in a new string (as a new request body parses it), and a new user turn.
    const again = timed(() => countPromptTokens(request(`${system} `.trimEnd(), 'second question')));
    expect(again.value - countTextTokens('second question')).toBe(first.value - countTextTokens('first question'));
    expect(first.value).toBe(3 + 3 + 1 + countTextTokens(system) + 3 + 1 + countTextTokens('first question'));
    // The tokenizer caches pieces of its own (a repeat takes about a fifth of the first count); this is far less.
    expect(again.ms).toBeLessThan(first.ms / 50);
  });

  it('still counts every text right once the recent ones no longer fit (oldest out first)', () => {
    const texts = Array.from({ length: 40 }, () => proseText(64 * 1024));
    const counts = texts.map((text) => countTextTokens(text));
    // 40 x 64 K characters are more than the 2 M characters kept: the first ones are counted afresh, still right.
    for (let round = 0; round < 2; round++) {
      texts.forEach((text, i) =>
        expect(countPromptTokens({ messages: [{ role: 'user', content: text }] })).toBe(3 + 3 + 1 + counts[i]!),
      );
    }
  }, 60_000);
});
