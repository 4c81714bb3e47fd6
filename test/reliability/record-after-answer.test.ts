/**
 * A finished request's metrics and access line are recorded after its answer is written, and its llm.completion is
 * built with its debit: a failure of either must neither crash the gateway nor touch the answer (nor the debit).
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventSink } from '../../src/events/index.js';
import { startGateway, type TestGateway } from '../support/gateway.js';

const lines: string[] = [];
const logger = pino(
  { level: 'info' },
  new Writable({ write: (chunk, _encoding, done) => void (lines.push(String(chunk)), done()) }),
);
let emitted = 0;
const failingEvents: EventSink = {
  wants: (type) => type === 'llm.completion',
  emit: () => {
    emitted++;
    throw new Error('the event sink is broken');
  },
};

let gateway: TestGateway;
beforeAll(async () => {
  gateway = await startGateway({ events: failingEvents, logger });
});
afterAll(() => gateway?.close());

describe('recording a finished request', () => {
  it('logs a failure of the event sink and goes on answering', async () => {
    const client = gateway.client(gateway.firstKey);
    for (const content of ['first', 'second']) {
      const completion = await client.chat.completions.create({
        model: 'sandbox/echo',
        messages: [{ role: 'user', content }],
      });
      expect(completion.choices[0]!.message.content).toBe(content);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(emitted).toBe(2);
    const failures = lines.filter(
      (line) =>
        line.includes('the events of a settlement could not be built') && line.includes('the event sink is broken'),
    );
    expect(failures).toHaveLength(2);
  });
});
