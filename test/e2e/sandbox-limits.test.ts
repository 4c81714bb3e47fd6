/**
 * Test keys are free, so the sandbox must not multiply what a client sends: `n` is capped and the generated text
 * of one answer is cut at 1 MiB, however long the prompt; and test keys share their account's rate limits.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type TestGateway } from '../support/gateway.js';

const MiB = 1024 * 1024;
/** A 540 KB prompt (90,000 tokens, within the model's context), the size that once came back 128 times. */
const PROMPT = 'lorem '.repeat(90_000);

let gateway: TestGateway;
let testKey: string;

beforeAll(async () => {
  gateway = await startGateway({
    overrides: {
      plans: {
        tiny: { requests_per_minute: 3, tokens_per_minute: 10_000_000 },
        free: { requests_per_minute: 1_000, tokens_per_minute: 100_000_000, daily_limit: 5 },
      },
    },
  });
  const account = await gateway.account();
  testKey = (await gateway.key(account.id, { environment: 'test' })).key;
});
afterAll(async () => gateway?.close());

async function chat(key: string, body: Record<string, unknown>) {
  const response = await fetch(`${gateway.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'sandbox/echo', messages: [{ role: 'user', content: PROMPT }], ...body }),
  });
  const text = await response.text();
  return { status: response.status, bytes: Buffer.byteLength(text), text };
}

describe('sandbox answers to test keys are bounded', () => {
  it('refuses n above 8 with 400 on param n', async () => {
    expect(PROMPT.length).toBe(540_000);
    const answer = await chat(testKey, { n: 128 });
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.text).error).toMatchObject({ code: 'invalid_request', param: 'n' });
  });

  it('cuts the echo of a long prompt to 1 MiB across all choices', async () => {
    const answer = await chat(testKey, { n: 8 });
    expect(answer.status).toBe(200);
    const body = JSON.parse(answer.text);
    expect(body.choices).toHaveLength(8);
    const text = body.choices.map((choice: any) => choice.message.content).join('');
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(MiB);
    expect(Buffer.byteLength(text)).toBeGreaterThan(MiB - 8);
    for (const choice of body.choices) {
      expect(choice.finish_reason).toBe('length');
      expect(PROMPT.startsWith(choice.message.content)).toBe(true);
    }
    expect(answer.bytes).toBeLessThan(1.1 * MiB);
  });

  it('cuts a streamed echo the same way', async () => {
    // One long word: the stream's pieces are 16 characters, not 6, so the test reads fewer events.
    const answer = await chat(testKey, {
      n: 2,
      stream: true,
      messages: [{ role: 'user', content: 'a'.repeat(540_000) }],
    });
    expect(answer.status).toBe(200);
    let text = '';
    for (const line of answer.text.split('\n')) {
      if (!line.startsWith('data: {')) continue;
      for (const choice of JSON.parse(line.slice(6)).choices) text += choice.delta.content ?? '';
    }
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(MiB);
    expect(Buffer.byteLength(text)).toBeGreaterThan(MiB - 2);
  });

  it('does not copy the prompt into every string field of a JSON schema or tool call', async () => {
    const properties = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`field${i}`, { type: 'string' }]));
    const schema = { type: 'object', properties };
    const formatted = await chat(testKey, {
      response_format: { type: 'json_schema', json_schema: { name: 'wide', schema } },
    });
    expect(formatted.status).toBe(200);
    expect(formatted.bytes).toBeLessThan(1.1 * MiB);
    const tool = { type: 'function', function: { name: 'wide', parameters: schema } };
    const called = await chat(testKey, { tools: [tool], tool_choice: 'required' });
    expect(called.status).toBe(200);
    expect(called.bytes).toBeLessThan(1.1 * MiB);
  });
});

describe('test keys and rate limits', () => {
  it("count against the account's requests per minute: 429 once the plan's limit is used", async () => {
    const account = await gateway.account({ plan: 'tiny' });
    const key = (await gateway.key(account.id, { environment: 'test' })).key;
    const ask = () => chat(key, { messages: [{ role: 'user', content: 'hi' }] });
    for (let i = 0; i < 3; i++) expect((await ask()).status).toBe(200);
    const refused = await ask();
    expect(refused.status).toBe(429);
    expect(JSON.parse(refused.text).error.code).toBe('rate_limit_exceeded');
    // The live key of the same account shares the window.
    expect((await chat(account.key, { messages: [{ role: 'user', content: 'hi' }] })).status).toBe(429);
  });
});
