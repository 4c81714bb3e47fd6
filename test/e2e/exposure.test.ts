/**
 * What a request exposes to the provider's bill beyond its text is priced or refused before anything is held:
 * a model that does not chat, a service tier or hosted tool without a catalog price, a web search without a bound,
 * Anthropic's 1M-context beta past the catalog's context, and content the provider fetches (a file by id), which
 * holds the model's whole context window. Live keys on the sandbox models, so the hold is real and no network is
 * needed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type TestGateway } from '../support/gateway.js';

let gateway: TestGateway;

beforeAll(async () => {
  gateway = await startGateway();
});
afterAll(async () => gateway?.close());

async function post(path: string, key: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(`${gateway.baseURL}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const json = (await response.json()) as any;
  return { status: response.status, json, headers: response.headers };
}

const hello = [{ role: 'user', content: 'Hello there' }];

async function liveKey(usd = 5): Promise<{ key: string; id: string }> {
  const account = await gateway.account();
  await gateway.setBalance(account.id, usd);
  return { key: account.key, id: account.id };
}

describe('refused before anything is held', () => {
  it('a model without chat on chat and Responses (embeddings only)', async () => {
    const { key } = await liveKey();
    const chat = await post('/chat/completions', key, { model: 'sandbox/embed', messages: hello });
    expect(chat.status).toBe(400);
    expect(chat.json.error).toMatchObject({ code: 'invalid_request', param: 'model' });
    expect(chat.json.error.message).toContain('does not chat');
    const responses = await post('/responses', key, { model: 'sandbox/embed', input: 'Hello' });
    expect(responses.status).toBe(400);
    expect(responses.json.error).toMatchObject({ param: 'model' });
  });

  it('a service tier the catalog has no price for; the standard ones pass', async () => {
    const { key } = await liveKey();
    const priority = await post('/chat/completions', key, {
      model: 'sandbox/echo',
      messages: hello,
      service_tier: 'priority',
    });
    expect(priority.status).toBe(400);
    expect(priority.json.error).toMatchObject({ code: 'invalid_request', param: 'service_tier' });
    const fast = await post('/messages', key, {
      model: 'sandbox/echo',
      max_tokens: 10,
      messages: hello,
      speed: 'fast',
    });
    expect(fast.status).toBe(400);
    expect(JSON.stringify(fast.json)).toContain('speed');
    for (const tier of ['auto', 'default']) {
      const ok = await post('/chat/completions', key, { model: 'sandbox/echo', messages: hello, service_tier: tier });
      expect(ok.status).toBe(200);
    }
  });

  it('hosted tools tollgate cannot price, and web search without a price', async () => {
    const { key } = await liveKey();
    const messages = (tool: Record<string, unknown>) =>
      post('/messages', key, { model: 'sandbox/echo', max_tokens: 10, messages: hello, tools: [tool] });
    const code = await messages({ type: 'code_execution_20250825', name: 'code_execution' });
    expect(code.status).toBe(400);
    expect(JSON.stringify(code.json)).toContain('code_execution');
    // Without max_uses the search is held (and sent) at 8 calls: the model still has no web search price.
    const unbounded = await messages({ type: 'web_search_20250305', name: 'web_search' });
    expect(unbounded.status).toBe(400);
    expect(JSON.stringify(unbounded.json)).toContain('Web search has no price');
    const unpriced = await messages({ type: 'web_search_20250305', name: 'web_search', max_uses: 2 });
    expect(unpriced.status).toBe(400);
    expect(JSON.stringify(unpriced.json)).toContain('Web search has no price');
    // A Responses request translated through chat leaves OpenAI's hosted tools out (Codex adds web_search): nothing
    // of theirs reaches the provider, so nothing is refused.
    const translated = await post('/responses', key, {
      model: 'sandbox/echo',
      input: 'Hi',
      tools: [{ type: 'web_search' }],
    });
    expect(translated.status).toBe(200);
  });

  it("Anthropic's 1M-context beta on a model whose catalog context is smaller", async () => {
    const { key } = await liveKey();
    const body = { model: 'sandbox/echo', max_tokens: 10, messages: hello };
    const refused = await post('/messages', key, body, { 'anthropic-beta': 'context-1m-2025-08-07' });
    expect(refused.status).toBe(400);
    expect(JSON.stringify(refused.json)).toContain('anthropic-beta');
    const other = await post('/messages', key, body, { 'anthropic-beta': 'prompt-caching-2024-07-31' });
    expect(other.status).toBe(200);
  });
});

describe('content the provider fetches holds the whole context window', () => {
  // sandbox/echo: $0.00015 per 1K prompt, 128,000 tokens of context: a file holds 128K prompt tokens, $0.0192.
  const withFile = {
    model: 'sandbox/echo',
    max_tokens: 10,
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Summarise' },
          { type: 'file', file: { file_id: 'file-abc' } },
        ],
      },
    ],
  };

  it('a balance that pays the text but not a whole context is a 402 for a file by id', async () => {
    const { key } = await liveKey(0.01);
    const plain = await post('/chat/completions', key, { ...withFile, messages: hello });
    expect(plain.status).toBe(200);
    const file = await post('/chat/completions', key, withFile);
    expect(file.status).toBe(402);
  });

  it('a balance that pays the whole context is served', async () => {
    const { key } = await liveKey(0.05);
    const file = await post('/chat/completions', key, withFile);
    expect(file.status).toBe(200);
  });
});
