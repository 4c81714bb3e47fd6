/** When a stream counts as answered (after which routing never retries): its first chunk with substance. */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { UpstreamChunk, Provider, ProviderCall } from '../../src/providers/index.js';
import type { Deployment } from '../../src/routing/index.js';
import { openStream } from '../../src/routing/open-stream.js';

const chunk = (delta: UpstreamChunk['choices'][number]['delta'], finish: 'stop' | null = null): UpstreamChunk => ({
  id: 'c',
  object: 'chat.completion.chunk',
  created: 0,
  model: 'm',
  choices: [{ index: 0, delta, finish_reason: finish }],
});
const OPENER = chunk({ role: 'assistant', content: '' });

type Step = UpstreamChunk | Error | number;
function deployment(steps: Step[], failsAfterOpening = true): Pick<Deployment, 'provider'> {
  const provider: Provider = {
    id: 'fake',
    failsAfterOpening,
    complete: () => Promise.reject(new Error('unused')),
    async *stream() {
      for (const step of steps) {
        if (typeof step === 'number') await sleep(step);
        else if (step instanceof Error) throw step;
        else yield step;
      }
    },
  };
  return { provider };
}
const call: ProviderCall = {
  body: { model: 'm', messages: [] },
  signal: new AbortController().signal,
  requestId: 'r',
  timeoutMs: 5_000,
};

async function rest(iterator: AsyncIterator<UpstreamChunk>): Promise<UpstreamChunk[]> {
  const out: UpstreamChunk[] = [];
  for (let next = await iterator.next(); !next.done; next = await iterator.next()) out.push(next.value);
  return out;
}

describe('openStream', () => {
  it('holds role-only openers until text arrives, then replays everything in order', async () => {
    const text = chunk({ content: 'Hi' });
    const end = chunk({}, 'stop');
    const start = await openStream(deployment([OPENER, chunk({}), 20, text, end]), call);
    expect(start.first).toEqual({ done: false, value: OPENER });
    expect(await rest(start.chunks)).toEqual([chunk({}), text, end]);
  });

  it('forwards the opener at once from a provider that does not fail after opening (no added time to first chunk)', async () => {
    const started = Date.now();
    const start = await openStream(deployment([OPENER, 300, chunk({ content: 'Hi' })], false), call);
    expect(start.first).toEqual({ done: false, value: OPENER });
    expect(Date.now() - started).toBeLessThan(250);
    expect(await rest(start.chunks)).toEqual([chunk({ content: 'Hi' })]);
  });

  it('a failure before any substance rejects the start, so that routing can retry it', async () => {
    await expect(openStream(deployment([OPENER, new Error('overloaded')]), call)).rejects.toThrow('overloaded');
  });

  it('a chunk with substance first is passed through untouched', async () => {
    const text = chunk({ role: 'assistant', content: 'Hi' });
    const start = await openStream(deployment([text, chunk({}, 'stop')]), call);
    expect(start.first.value).toBe(text);
  });

  it('a slow start (a model thinking) is committed after the hold; a later failure reaches the relay', async () => {
    const started = Date.now();
    const start = await openStream(deployment([OPENER, 2_300, new Error('late failure')]), call);
    const held = Date.now() - started;
    expect(held).toBeGreaterThanOrEqual(1_900);
    expect(held).toBeLessThan(2_250);
    expect(start.first.value).toBe(OPENER);
    await expect(start.chunks.next()).rejects.toThrow('late failure');
  });
});
