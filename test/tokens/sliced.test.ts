/**
 * Counting in slices: the count is the one made at once, tenants take turns (a small count is not held behind a
 * large one of another tenant), and a client that goes away stops its count.
 */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { countTextTokens, measureSliced } from '../../src/tokens/index.js';

/** Random base64 texts (no two alike, nothing remembered between tests), the tokenizer's slow end. */
function randomTexts(count: number): string[] {
  return Array.from({ length: count }, () => randomBytes(90).toString('base64'));
}

const measureOf = (texts: string[]) => () => texts.reduce((sum, text) => sum + countTextTokens(text), 0);

describe('measureSliced', () => {
  it('gives the count made at once', async () => {
    const texts = randomTexts(300);
    const sliced = await measureSliced(measureOf(texts), { queue: 'a' });
    expect(sliced).toBe(measureOf(texts)());
  });

  it("answers a small count before a large one of another tenant that was queued first, and one tenant's in order", async () => {
    const finished: string[] = [];
    const run = (name: string, queue: string, texts: string[]) =>
      measureSliced(measureOf(texts), { queue }).then(() => finished.push(name));
    await Promise.all([
      run('heavy 1', 'heavy', randomTexts(600)),
      run('heavy 2', 'heavy', randomTexts(600)),
      run('light', 'light', randomTexts(100)),
    ]);
    expect(finished).toEqual(['light', 'heavy 1', 'heavy 2']);
  });

  it('stops counting when the client goes away', async () => {
    const client = new AbortController();
    const counting = measureSliced(measureOf(randomTexts(2_000)), { queue: 'gone', signal: client.signal });
    setTimeout(() => client.abort(), 5);
    await expect(counting).rejects.toMatchObject({ message: expect.stringContaining('closed') });
  });
});
