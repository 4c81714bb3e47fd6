/**
 * POST /v1/messages end to end with live keys: natively to a local server speaking Anthropic's Messages API (the
 * client's blocks unchanged, cache reads and writes each billed at their own price), streams settled before message_stop, a client
 * that goes away charged for what it got, an Idempotency-Key replaying a stream, and the money invariants under
 * 100 concurrent mixed requests.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultConfig } from '../../src/config/index.js';
import { CLAUDE_CODE_BETAS, claudeCodeBody } from '../support/claude-code.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { startMockAnthropic, type MockAnthropic } from '../support/mock-anthropic.js';

const CLAUDE = 'claude-sonnet-5-5';
/** claude-sonnet-5-5's prices in nano-USD per token: $0.002 and $0.01 per 1K. */
const PROMPT_NANO = 2_000;
const COMPLETION_NANO = 10_000;

const nano = (usd: number) => Math.round(usd * 1e9);

let gateway: TestGateway;
let upstream: MockAnthropic;

beforeAll(async () => {
  upstream = await startMockAnthropic({ apiKey: 'sk-ant-e2e' });
  gateway = await startGateway({
    env: { ANTHROPIC_API_KEY: 'sk-ant-e2e', ANTHROPIC_BASE_URL: upstream.url },
    overrides: { routing: { ...defaultConfig().routing, backoff_ms: 5, breaker_failures: 1_000 } },
  });
});
afterAll(async () => {
  await gateway?.close();
  await upstream?.close();
});

function post(key: string, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal) {
  return fetch(`${gateway.baseURL}/messages`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    ...(signal ? { signal } : {}),
  });
}

async function balance(accountId: string): Promise<number> {
  const { body } = await gateway.admin('GET', `/admin/accounts/${accountId}`);
  return nano(body.balance.credits);
}

interface Event {
  event: string;
  data: any;
}

/** Reads SSE events as they arrive; `onEvent` runs before the next one is read. */
async function readEvents(response: Response, onEvent?: (event: Event) => Promise<boolean | void>): Promise<Event[]> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  const events: Event[] = [];
  let buffer = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return events;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const raw = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event = /^event: (.*)$/m.exec(raw)?.[1];
      const data = /^data: (.*)$/m.exec(raw)?.[1];
      if (!event || data === undefined) continue;
      const parsed = { event, data: JSON.parse(data) };
      events.push(parsed);
      if ((await onEvent?.(parsed)) === true) {
        await reader.cancel();
        return events;
      }
    }
  }
}

/** The prompt's cost in nano-USD, each kind at claude-sonnet-5-5's price: $0.0001 per 1K read, $0.0025 written. */
const promptCostOf = (usage: any): number => {
  const hour = usage.cache_creation?.ephemeral_1h_input_tokens ?? 0;
  const written = (usage.cache_creation_input_tokens ?? 0) - hour;
  return usage.input_tokens * PROMPT_NANO + (usage.cache_read_input_tokens ?? 0) * 100 + written * 2_500 + hour * 4_000;
};

describe('POST /v1/messages natively to Anthropic', () => {
  it('sends the client body unchanged (cache_control, thinking with its signature, tool ids) and bills cache tokens', async () => {
    const { id, key } = await gateway.account();
    const before = await balance(id);
    const body = {
      model: CLAUDE,
      max_tokens: 2_000,
      system: [{ type: 'text', text: 'You are a careful agent.', cache_control: { type: 'ephemeral' } }],
      thinking: { type: 'enabled', budget_tokens: 1_024 },
      tools: [
        {
          name: 'read_file',
          description: 'Reads a file',
          input_schema: { type: 'object', properties: { path: { type: 'string' } } },
          cache_control: { type: 'ephemeral' },
        },
      ],
      messages: [
        { role: 'user', content: [{ type: 'text', text: 'Open the README', cache_control: { type: 'ephemeral' } }] },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'I should read it.', signature: 'sig-abc' },
            { type: 'redacted_thinking', data: 'opaque' },
            { type: 'tool_use', id: 'toolu_9', name: 'read_file', input: { path: 'README.md' } },
          ],
        },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_9', content: '# tollgate' }] },
      ],
    };
    // Claude Code names its beta features in anthropic-beta; Anthropic needs the header with their body fields.
    const beta = 'interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14';
    const response = await post(key, body, { 'anthropic-beta': beta });
    expect(response.status).toBe(200);
    const message: any = await response.json();
    expect(upstream.requests.at(-1)!.body).toEqual(body);
    expect(upstream.requests.at(-1)!.headers['x-api-key']).toBe('sk-ant-e2e');
    expect(upstream.requests.at(-1)!.headers['anthropic-beta']).toBe(beta);
    expect(message).toMatchObject({ type: 'message', model: CLAUDE, stop_reason: 'end_turn' });
    expect(message.usage.cache_read_input_tokens).toBe(2);
    expect(response.headers.get('x-tollgate-provider')).toBe('anthropic');
    const cost = promptCostOf(message.usage) + message.usage.output_tokens * COMPLETION_NANO;
    expect(nano(Number(response.headers.get('x-tollgate-cost')))).toBe(cost);
    expect(before - (await balance(id))).toBe(cost);
  });

  it("streams Anthropic's events as they are, settled before message_stop, with the cost on message_delta", async () => {
    const { id, key } = await gateway.account();
    const before = await balance(id);
    upstream.enqueue({ kind: 'ok', thinking: true });
    const response = await post(key, {
      model: CLAUDE,
      max_tokens: 300,
      stream: true,
      thinking: { type: 'enabled', budget_tokens: 1_024 },
      messages: [{ role: 'user', content: 'Think, then answer' }],
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    let chargedAtDelta: number | undefined;
    const events = await readEvents(response, async ({ event }) => {
      if (event === 'message_delta') chargedAtDelta = before - (await balance(id));
    });
    const names = events.map((e) => e.event);
    expect(names[0]).toBe('message_start');
    expect(names.at(-1)).toBe('message_stop');
    const deltas = events.filter((e) => e.event === 'content_block_delta').map((e) => e.data.delta.type);
    expect(deltas).toEqual(expect.arrayContaining(['thinking_delta', 'signature_delta', 'text_delta']));
    const start = events[0]!.data.message;
    expect(start.model).toBe(CLAUDE);
    const delta = events.find((e) => e.event === 'message_delta')!.data;
    const cost = promptCostOf(start.usage) + delta.usage.output_tokens * COMPLETION_NANO;
    expect(nano(delta.usage.cost)).toBe(cost);
    // The charge was durable when message_delta arrived, before message_stop.
    expect(chargedAtDelta).toBe(cost);
  });

  it("Claude Code's request (beta fields, a system turn mid-conversation) goes upstream as sent, billed exactly", async () => {
    const { id, key } = await gateway.account();
    const before = await balance(id);
    const body = claudeCodeBody(CLAUDE);
    const beta = CLAUDE_CODE_BETAS.join(',');
    const response = await fetch(`${gateway.baseURL}/messages?beta=true`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'anthropic-version': '2023-06-01',
        'anthropic-beta': beta,
        'content-type': 'application/json',
      },
      body: JSON.stringify(body),
    });
    expect(response.status).toBe(200);
    const events = await readEvents(response);
    expect(events.at(-1)!.event).toBe('message_stop');
    const sent = upstream.requests.at(-1)!;
    expect(sent.body).toEqual({ ...body, model: 'claude-sonnet-5-5' });
    expect(sent.headers['anthropic-beta']).toBe(beta);
    const start = events[0]!.data.message;
    const delta = events.find((e) => e.event === 'message_delta')!.data;
    const cost = promptCostOf(start.usage) + delta.usage.output_tokens * COMPLETION_NANO;
    expect(nano(delta.usage.cost)).toBe(cost);
    expect(before - (await balance(id))).toBe(cost);
  });

  it('a client that goes away mid-stream is charged for the prompt and what it was sent, not the whole answer', async () => {
    const { id, key } = await gateway.account();
    const before = await balance(id);
    const words = Array.from({ length: 200 }, (_, i) => `word${i}`).join(' ');
    upstream.enqueue({ kind: 'ok', text: words, delayMs: 20 });
    const controller = new AbortController();
    const response = await post(
      key,
      { model: CLAUDE, max_tokens: 1_000, stream: true, messages: [{ role: 'user', content: 'Count' }] },
      {},
      controller.signal,
    );
    let texts = 0;
    const events = await readEvents(response, ({ event }) =>
      Promise.resolve(event === 'content_block_delta' && ++texts === 3),
    );
    controller.abort();
    const promptCost = promptCostOf(events[0]!.data.message.usage);
    let charged = 0;
    for (let i = 0; i < 100 && charged === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      charged = before - (await balance(id));
    }
    expect(charged).toBeGreaterThanOrEqual(promptCost + 3 * COMPLETION_NANO);
    expect(charged).toBeLessThan(promptCost + 100 * COMPLETION_NANO);
    // The upstream was let go too.
    expect(upstream.requests.at(-1)!.completed).toBe(false);
  });

  it('a completion bound lowered to what the balance pays goes upstream, with the thinking budget under it', async () => {
    const { id, key } = await gateway.account();
    // About 2,000 tokens of completion at $0.01 per 1K.
    await gateway.setBalance(id, 0.02);
    const response = await post(key, {
      model: CLAUDE,
      max_tokens: 8_000,
      thinking: { type: 'enabled', budget_tokens: 4_000 },
      messages: [{ role: 'user', content: 'Think hard' }],
    });
    expect(response.status).toBe(200);
    const lowered = Number(response.headers.get('x-tollgate-max-tokens-lowered'));
    expect(lowered).toBeGreaterThan(1_024);
    expect(lowered).toBeLessThan(2_000);
    const sent = upstream.requests.at(-1)!.body;
    expect(sent.max_tokens).toBe(lowered);
    expect(sent.thinking).toEqual({ type: 'enabled', budget_tokens: lowered - 1 });
  });

  it('an Idempotency-Key replays a stream without asking the upstream or charging again', async () => {
    const { id, key } = await gateway.account();
    const body = { model: CLAUDE, max_tokens: 100, stream: true, messages: [{ role: 'user', content: 'Once' }] };
    const headers = { 'idempotency-key': `messages-${Date.now()}` };
    const first = await post(key, body, headers);
    const firstEvents = await readEvents(first);
    const charged = await balance(id);
    const calls = upstream.requests.length;
    const second = await post(key, body, headers);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(await readEvents(second)).toEqual(firstEvents);
    expect(firstEvents.at(-1)!.event).toBe('message_stop');
    expect(upstream.requests.length).toBe(calls);
    expect(await balance(id)).toBe(charged);
  });

  it('100 concurrent mixed requests at an account that can pay for about 20: balance = ledger sum, never below 0', async () => {
    const account = await gateway.account({ plan: 'pay_as_you_go' });
    // An answer costs about 0.1 mUSD at claude-sonnet-5-5's prices (a hold up to 0.5 mUSD, for 50 tokens of completion).
    await gateway.setBalance(account.id, 0.002);
    const startNano = await balance(account.id);
    const outcomes = await Promise.all(
      Array.from({ length: 100 }, async (_, i) => {
        const stream = i % 2 === 0;
        const model = i % 4 === 3 ? 'sandbox/echo' : CLAUDE;
        const response = await post(account.key, {
          model,
          max_tokens: 50,
          stream,
          messages: [{ role: 'user', content: `request ${i}` }],
        });
        if (response.status !== 200) return { status: response.status, body: await response.json(), costNano: 0 };
        if (!stream) {
          await response.json();
          return { status: 200, costNano: nano(Number(response.headers.get('x-tollgate-cost'))) };
        }
        const events = await readEvents(response);
        const delta = events.find((e) => e.event === 'message_delta');
        expect(events.at(-1)!.event).toBe('message_stop');
        return { status: 200, costNano: nano(delta!.data.usage.cost) };
      }),
    );
    const ok = outcomes.filter((o) => o.status === 200);
    const refused = outcomes.filter((o) => o.status !== 200);
    expect(ok.length).toBeGreaterThan(5);
    expect(refused.length).toBeGreaterThan(5);
    for (const r of refused) expect([r.status, (r as any).body.error.type]).toEqual([402, 'billing_error']);

    const balanceNano = await balance(account.id);
    expect(balanceNano).toBeGreaterThanOrEqual(0);
    const ledger = await gateway.admin('GET', `/admin/accounts/${account.id}/ledger?limit=500`);
    const entries = ledger.body.data as Array<{ kind: string; amount: number }>;
    expect(entries.reduce((sum, e) => sum + nano(e.amount), 0)).toBe(balanceNano);
    const debits = -entries.filter((e) => e.kind === 'debit').reduce((sum, e) => sum + nano(e.amount), 0);
    expect(ok.reduce((sum, o) => sum + o.costNano, 0)).toBe(debits);
    expect(startNano - balanceNano).toBe(debits);
    expect(entries.filter((e) => e.kind === 'debit')).toHaveLength(ok.length);
  });
});

describe('POST /v1/messages at the edges', () => {
  it("answers bad input, a bad key and a refused model in Anthropic's envelope, and takes Authorization too", async () => {
    const { key } = await gateway.account();
    const missing = await post(key, { model: CLAUDE, messages: [{ role: 'user', content: 'hi' }] });
    expect(missing.status).toBe(400);
    expect(await missing.json()).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: "Missing required parameter: 'max_tokens'." },
    });
    expect(missing.headers.get('request-id')).toBeTruthy();

    const broken = await fetch(`${gateway.baseURL}/messages`, {
      method: 'POST',
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      body: '{"model":',
    });
    expect(broken.status).toBe(400);
    expect(((await broken.json()) as any).error.type).toBe('invalid_request_error');

    const keyless = await fetch(`${gateway.baseURL}/messages`, { method: 'POST', body: '{}' });
    expect(keyless.status).toBe(401);
    expect(((await keyless.json()) as any).error.type).toBe('authentication_error');

    const unknown = await post(key, {
      model: 'claude-nope',
      max_tokens: 5,
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as any).error.type).toBe('not_found_error');

    const bearer = await fetch(`${gateway.baseURL}/messages`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: CLAUDE, max_tokens: 20, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(bearer.status).toBe(200);
  });

  it('an upstream overloaded right after opening a stream is retried before the client sees a byte', async () => {
    const { key } = await gateway.account();
    const calls = upstream.requests.length;
    upstream.enqueue({ kind: 'stream-error', afterDeltas: 0, type: 'overloaded_error' });
    const response = await post(key, {
      model: CLAUDE,
      max_tokens: 50,
      stream: true,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(response.status).toBe(200);
    const events = await readEvents(response);
    expect(events.map((e) => e.event)).not.toContain('error');
    expect(events.at(-1)!.event).toBe('message_stop');
    expect(upstream.requests.length).toBe(calls + 2);
  });

  it('an upstream that keeps failing is a 5xx in the envelope, and nothing is charged', async () => {
    const { id, key } = await gateway.account();
    const before = await balance(id);
    upstream.setBehavior({ kind: 'error', status: 529, type: 'overloaded_error' });
    try {
      const response = await post(key, { model: CLAUDE, max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] });
      expect(response.status).toBeGreaterThanOrEqual(500);
      const body: any = await response.json();
      expect(body.type).toBe('error');
      expect(['api_error', 'overloaded_error']).toContain(body.error.type);
    } finally {
      upstream.setBehavior({ kind: 'ok' });
    }
    expect(await balance(id)).toBe(before);
  });

  it('a test key is answered by the sandbox for a Claude model, at cost 0; count_tokens is not charged', async () => {
    const { id } = await gateway.account();
    const test = await gateway.key(id, { environment: 'test' });
    const calls = upstream.requests.length;
    const response = await post(test.key, {
      model: CLAUDE,
      max_tokens: 30,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-tollgate-provider')).toBe('sandbox');
    expect(response.headers.get('x-tollgate-cost')).toBe('0');
    expect(((await response.json()) as any).content[0].type).toBe('text');
    expect(upstream.requests.length).toBe(calls);

    const live = (await gateway.key(id)).key;
    const before = await balance(id);
    const counted = await fetch(`${gateway.baseURL}/messages/count_tokens`, {
      method: 'POST',
      headers: { 'x-api-key': live, 'content-type': 'application/json' },
      body: JSON.stringify({ model: CLAUDE, messages: [{ role: 'user', content: 'How long is this?' }] }),
    });
    expect(counted.status).toBe(200);
    expect(((await counted.json()) as any).input_tokens).toBeGreaterThan(3);
    expect(counted.headers.get('x-ratelimit-remaining-requests')).toBeTruthy();
    expect(await balance(id)).toBe(before);
  });
});
