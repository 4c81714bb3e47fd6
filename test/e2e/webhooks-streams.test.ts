/**
 * llm.streaming.start, .chunk and .end from every streamed endpoint, delivered to a real receiver: text
 * completions, the Messages API passed through to a local Anthropic server, the Responses API passed through to a
 * local OpenAI server, and the Responses API translated through chat. The chunks' content is the text the client
 * was streamed, in order, under one stream id, and the end event counts them.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { startMockAnthropic, type MockAnthropic } from '../support/mock-anthropic.js';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.js';
import { startReceiver, TEST_WEBHOOKS, type Receiver } from '../webhooks/receiver-server.js';

const SECRET = 'receiver-secret-0123456789-0123456789';
const STREAM_EVENTS = ['llm.streaming.start', 'llm.streaming.chunk', 'llm.streaming.end', 'llm.completion'];

let gateway: TestGateway;
let openai: MockOpenAI;
let anthropic: MockAnthropic;
let receiver: Receiver;

beforeAll(async () => {
  [openai, anthropic, receiver] = await Promise.all([
    startMockOpenAI({ apiKey: 'sk-e2e' }),
    startMockAnthropic({ apiKey: 'sk-ant-e2e' }),
    startReceiver(),
  ]);
  gateway = await startGateway({
    env: {
      OPENAI_API_KEY: 'sk-e2e',
      OPENAI_BASE_URL: openai.url,
      ANTHROPIC_API_KEY: 'sk-ant-e2e',
      ANTHROPIC_BASE_URL: anthropic.url,
    },
    overrides: { webhooks: TEST_WEBHOOKS },
  });
});
afterAll(async () => {
  await gateway?.close();
  await Promise.all([openai?.close(), anthropic?.close(), receiver?.close()]);
});

interface Sse {
  event: string | undefined;
  data: any;
}

/** A streamed request from a fresh account whose webhook wants the stream events; its SSE events parsed. */
async function stream(
  path: string,
  body: Record<string, unknown>,
  headers: Record<string, string> = {},
): Promise<{ events: Sse[]; received: () => Promise<any[]> }> {
  const account = await gateway.account();
  const hook = `/${path.replaceAll('/', '-')}-${account.id}`;
  const registered = await fetch(`${gateway.baseURL}/webhooks`, {
    method: 'POST',
    headers: { authorization: `Bearer ${account.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ url: receiver.url + hook, secret: SECRET, events: STREAM_EVENTS.map((type) => ({ type })) }),
  });
  expect(registered.status).toBe(201);
  const response = await fetch(`${gateway.baseURL}/${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${account.key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ ...body, stream: true }),
  });
  expect(response.status).toBe(200);
  const events = (await response.text())
    .split('\n\n')
    .filter((block) => block.includes('data: '))
    .map((block) => {
      const event = /^event: (.+)$/m.exec(block)?.[1];
      const data = /^data: (.+)$/m.exec(block)![1]!;
      return { event, data: data === '[DONE]' ? data : JSON.parse(data) };
    });
  // Every chunk, then the end and the completion: the end event tells how many chunks to wait for.
  const received = async () => {
    const mine = (x: { path: string }) => x.path === hook;
    const [end] = (await receiver.waitFor(1, (x) => mine(x) && x.body.includes('"llm.streaming.end"'))).map((x) =>
      JSON.parse(x.body),
    );
    const expected = end.data.totalChunks + 3;
    return (await receiver.waitFor(expected, mine)).map((x) => JSON.parse(x.body));
  };
  return { events, received };
}

/** The stream events' story: one start, chunks 0..n-1 whose content is `text`, one end counting them. */
function expectStreamEvents(delivered: any[], text: string, streamId?: string): void {
  const byType = (type: string) => delivered.filter((e) => e.event === type);
  expect(byType('llm.streaming.start')).toHaveLength(1);
  const start = byType('llm.streaming.start')[0].data;
  if (streamId) expect(start.streamId).toBe(streamId);
  const chunks = byType('llm.streaming.chunk').sort((a, b) => a.data.chunkIndex - b.data.chunkIndex);
  expect(chunks.length).toBeGreaterThan(1);
  expect(chunks.map((c) => c.data.chunkIndex)).toEqual([...Array(chunks.length).keys()]);
  expect(chunks.map((c) => c.data.content).join('')).toBe(text);
  expect(chunks.every((c) => c.data.streamId === start.streamId)).toBe(true);
  expect(byType('llm.streaming.end')).toHaveLength(1);
  expect(byType('llm.streaming.end')[0].data).toMatchObject({ streamId: start.streamId, totalChunks: chunks.length });
  expect(byType('llm.completion')).toHaveLength(1);
}

it('a text-completion stream sends its chunks as llm.streaming events', async () => {
  const { events, received } = await stream('completions', {
    model: 'sandbox/lorem',
    prompt: 'Once upon a time',
    max_tokens: 12,
  });
  expect(events.at(-1)!.data).toBe('[DONE]');
  const text = events
    .slice(0, -1)
    .map((e) => e.data.choices.map((c: { text: string }) => c.text).join(''))
    .join('');
  expectStreamEvents(await received(), text, events[0]!.data.id);
});

it('a Messages stream passed through to Anthropic sends its deltas as llm.streaming events', async () => {
  const { events, received } = await stream(
    'messages',
    { model: 'claude-sonnet-5-5', max_tokens: 64, messages: [{ role: 'user', content: 'Hi' }] },
    { 'anthropic-version': '2023-06-01' },
  );
  expect(anthropic.requests.at(-1)!.path).toBe('/v1/messages');
  expect(events.at(-1)!.event).toBe('message_stop');
  const text = events
    .filter((e) => e.event === 'content_block_delta')
    .map((e) => e.data.delta.text)
    .join('');
  expect(text.length).toBeGreaterThan(0);
  expectStreamEvents(await received(), text, events[0]!.data.message.id);
});

it('a Responses stream passed through to OpenAI sends its text deltas as llm.streaming events', async () => {
  const { events, received } = await stream('responses', { model: 'gpt-6-luna', input: 'Stream it' });
  expect(openai.requests.at(-1)!.path).toBe('/v1/responses');
  expect(events.at(-1)!.event).toBe('response.completed');
  const text = events
    .filter((e) => e.event === 'response.output_text.delta')
    .map((e) => e.data.delta)
    .join('');
  expect(text).toBe('Hello from the mock upstream.');
  expectStreamEvents(await received(), text, events[0]!.data.response.id);
});

it('a Responses stream translated through chat sends its text deltas as llm.streaming events', async () => {
  const { events, received } = await stream('responses', {
    model: 'sandbox/lorem',
    input: 'Stream it',
    max_output_tokens: 12,
  });
  // Lorem writes until its bound: the Response ends incomplete.
  expect(events.at(-1)!.event).toBe('response.incomplete');
  const text = events
    .filter((e) => e.event === 'response.output_text.delta')
    .map((e) => e.data.delta)
    .join('');
  expectStreamEvents(await received(), text);
});
