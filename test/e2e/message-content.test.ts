/** `messages[].content` is required by role: always for system, developer, user and tool; for assistant unless it calls tools. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type TestGateway } from '../support/gateway.js';

let gw: TestGateway;
let key: string;

beforeAll(async () => {
  gw = await startGateway();
  ({ key } = await gw.account());
});
afterAll(async () => {
  await gw?.close();
});

async function chat(messages: unknown[]) {
  const response = await fetch(`${gw.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'sandbox/echo', messages }),
  });
  return { status: response.status, body: (await response.json()) as any };
}

const call = { id: 'call_1', type: 'function', function: { name: 'lookup', arguments: '{}' } };

describe('messages[].content', () => {
  it.each(['system', 'developer', 'user', 'tool'])('a %s message without content is 400 with param', async (role) => {
    const message = role === 'tool' ? { role, tool_call_id: 'call_1' } : { role };
    const sent = await chat([{ role: 'user', content: 'Hi' }, message]);
    expect(sent.status, JSON.stringify(sent.body)).toBe(400);
    expect(sent.body.error).toMatchObject({
      type: 'invalid_request_error',
      code: 'invalid_request',
      param: 'messages[1].content',
      message: "Missing required parameter: 'messages[1].content'.",
    });
  });

  it('a user message with null content is 400 with param', async () => {
    const sent = await chat([{ role: 'user', content: null }]);
    expect(sent.status, JSON.stringify(sent.body)).toBe(400);
    expect(sent.body.error).toMatchObject({ code: 'invalid_request', param: 'messages[0].content' });
    expect(sent.body.error.message).toMatch(/^Invalid value for 'messages\[0\]\.content': /);
  });

  it('an assistant message without content and without tool_calls is 400', async () => {
    const sent = await chat([
      { role: 'user', content: 'Hi' },
      { role: 'assistant' },
      { role: 'user', content: 'Again' },
    ]);
    expect(sent.status, JSON.stringify(sent.body)).toBe(400);
    expect(sent.body.error.param).toBe('messages[1].content');
  });

  it('an assistant message with tool_calls may omit content or send null', async () => {
    for (const assistant of [
      { role: 'assistant', tool_calls: [call] },
      { role: 'assistant', content: null, tool_calls: [call] },
    ]) {
      const sent = await chat([
        { role: 'user', content: 'Hi' },
        assistant,
        { role: 'tool', tool_call_id: 'call_1', content: '{"ok":true}' },
      ]);
      expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    }
  });
});
