/**
 * Answers tollgate cannot take as they are.
 *
 * An upstream whose usage block is not token counts (a fraction, a string, a negative or enormous number): the
 * request is answered and charged on tollgate's own count, exactly as when the upstream reports no usage, and the
 * account is left as it should be (no hold left open, balance = grant - what the clients were told). Before, such a
 * request was a 503 after the upstream had answered, and its hold stayed open: three of them and a new account's
 * next request was refused for insufficient credits.
 *
 * A chat completion whose choices are not messages (no message, a null one, tool calls that are not function
 * calls): a 502 naming the provider, not charged, its hold released. Before, a 500 after the upstream had answered,
 * with the hold left open.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DIALECTS } from '../support/databases.js';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../support/gateway.js';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.js';
import { describeEach } from '../support/backends.js';

const BAD_COUNTS: unknown[] = [12.5, 'abc', -5, 1e300, null];
const nano = (usd: number): bigint => BigInt(Math.round(usd * 1e9));

function answerBody(usage: unknown): string {
  return JSON.stringify({
    id: 'chatcmpl-bad-usage',
    object: 'chat.completion',
    created: 1,
    model: 'm',
    choices: [{ index: 0, message: { role: 'assistant', content: 'hello there' }, finish_reason: 'stop' }],
    ...(usage === undefined ? {} : { usage }),
  });
}

function streamBody(usage: unknown): string {
  const chunk = (fields: object) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-bad-usage', object: 'chat.completion.chunk', created: 1, model: 'm', ...fields })}\n\n`;
  return (
    chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'hello' }, finish_reason: null }] }) +
    chunk({ choices: [{ index: 0, delta: { content: ' there' }, finish_reason: 'stop' }] }) +
    (usage === undefined ? '' : chunk({ choices: [], usage })) +
    'data: [DONE]\n\n'
  );
}

describeEach(DIALECTS)('answers an upstream gets wrong, on %s', (dialect) => {
  let gw: TestGateway;
  let mock: MockOpenAI;
  let model: string;

  beforeAll(async () => {
    mock = await startMockOpenAI();
    gw = await startGateway({ dialect, env: { OPENAI_API_KEY: 'upstream-key', OPENAI_BASE_URL: mock.url } });
    const models = (await (
      await fetch(`${gw.baseURL}/models?provider=openai`, { headers: { authorization: `Bearer ${gw.firstKey}` } })
    ).json()) as { data: Array<{ id: string }> };
    model = models.data[0]!.id;
  });
  afterAll(async () => {
    await gw?.close();
    await mock?.close();
  });

  async function reservationsOpen(): Promise<string | undefined> {
    const metrics = await (
      await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } })
    ).text();
    return /^tollgate_reservations_open(?:\{[^}]*\})? (\S+)$/m.exec(metrics)?.[1];
  }

  /** One request answered by the upstream with `usage` (undefined: none); its status, usage and reported cost. */
  async function ask(
    key: string,
    stream: boolean,
    usage: unknown,
  ): Promise<{ status: number; usage: any; body: string }> {
    mock.enqueue(
      stream
        ? { kind: 'raw', headers: { 'content-type': 'text/event-stream' }, body: streamBody(usage) }
        : { kind: 'raw', headers: { 'content-type': 'application/json' }, body: answerBody(usage) },
    );
    const res = await fetch(`${gw.baseURL}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model,
        messages: [{ role: 'user', content: 'Say hello.' }],
        ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
      }),
    });
    const body = await res.text();
    if (res.status !== 200) return { status: res.status, usage: undefined, body };
    if (!stream) return { status: 200, usage: JSON.parse(body).usage, body };
    const events = body.split('\n\n').filter((e) => e.startsWith('data: {'));
    return { status: 200, usage: JSON.parse(events.at(-1)!.slice(6)).usage, body };
  }

  it("answers and charges on tollgate's own count, leaves no hold open, and the balance is the grant minus what clients were told", async () => {
    const account = await gw.account();
    const start = nano((await gw.admin('GET', `/admin/accounts/${account.id}`)).body.balance.credits);
    let told = 0n;
    for (const stream of [false, true]) {
      // What tollgate counts by itself: the same answer with no usage block.
      const own = await ask(account.key, stream, undefined);
      expect(own.status).toBe(200);
      told += nano(own.usage.cost);
      for (const bad of BAD_COUNTS) {
        for (const field of ['prompt_tokens', 'completion_tokens'] as const) {
          const usage = { prompt_tokens: 9, completion_tokens: 2, total_tokens: 11, [field]: bad };
          const live = await ask(account.key, stream, usage);
          expect(live.status, `${field} = ${JSON.stringify(bad)}, stream ${stream}: ${live.body.slice(0, 200)}`).toBe(
            200,
          );
          const expected = field === 'prompt_tokens' ? [own.usage.prompt_tokens, 2] : [9, own.usage.completion_tokens];
          expect(
            [live.usage.prompt_tokens, live.usage.completion_tokens],
            `${field} = ${JSON.stringify(bad)}, stream ${stream}, own ${JSON.stringify(own.usage)}`,
          ).toEqual(expected);
          told += nano(live.usage.cost);
        }
      }
    }
    const after = await gw.admin('GET', `/admin/accounts/${account.id}`);
    expect(nano(after.body.balance.credits)).toBe(start - told);
    expect(await reservationsOpen()).toBe('0');
    const credits = (await (
      await fetch(`${gw.baseURL}/credits`, { headers: { authorization: `Bearer ${account.key}` } })
    ).json()) as any;
    expect(credits.usage.daily.requests).toBe(2 * (1 + 2 * BAD_COUNTS.length));
  });

  it('a completion whose choices are not messages is a 502, not charged, and its hold is released', async () => {
    const account = await gw.account();
    const start = nano((await gw.admin('GET', `/admin/accounts/${account.id}`)).body.balance.credits);
    let told = 0n;
    const malformed = [
      [{ index: 0, finish_reason: 'stop' }],
      [{ index: 0, message: null }],
      [null],
      [{ index: 0, message: { role: 'assistant', content: null, tool_calls: [{}] } }],
      [{ index: 0, message: { role: 'assistant', content: 'ok', tool_calls: 'x' } }],
    ];
    try {
      for (const choices of malformed) {
        // Every attempt (the router retries a protocol error) gets the same answer.
        mock.setBehavior({
          kind: 'raw',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ id: 'x', object: 'chat.completion', created: 1, model: 'm', choices }),
        });
        const res = await fetch(`${gw.baseURL}/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${account.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model, messages: [{ role: 'user', content: 'Say hello.' }] }),
        });
        const body = (await res.json()) as any;
        expect(res.status, JSON.stringify(choices)).toBe(502);
        expect(body.error.code).toBe('upstream_error');
        expect(body.error.message).toMatch(/not a chat completion/);
        expect(await reservationsOpen()).toBe('0');
        // The account goes on being served (and the success closes the deployment's failure count again).
        const next = await ask(account.key, false, undefined);
        expect(next.status).toBe(200);
        told += nano(next.usage.cost);
      }
    } finally {
      mock.setBehavior({ kind: 'ok' });
    }
    // Only the good answers were charged.
    expect(nano((await gw.admin('GET', `/admin/accounts/${account.id}`)).body.balance.credits)).toBe(start - told);
  });

  it('a stream choice without a delta (as some servers finish) is an empty delta; a choice that is not one ends the stream with an error event', async () => {
    const account = await gw.account();
    const chunk = (fields: object) =>
      `data: ${JSON.stringify({ id: 'chatcmpl-x', object: 'chat.completion.chunk', created: 1, model: 'm', ...fields })}\n\n`;
    const hello = chunk({
      choices: [{ index: 0, delta: { role: 'assistant', content: 'hello' }, finish_reason: null }],
    });
    const stream = async (body: string) => {
      mock.enqueue({ kind: 'raw', headers: { 'content-type': 'text/event-stream' }, body });
      const res = await fetch(`${gw.baseURL}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${account.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: 'Say hello.' }] }),
      });
      expect(res.status).toBe(200);
      return (await res.text())
        .split('\n\n')
        .filter((e) => e.startsWith('data: '))
        .map((e) => e.slice(6));
    };

    const finished = await stream(
      hello + chunk({ choices: [{ index: 0, finish_reason: 'stop' }] }) + 'data: [DONE]\n\n',
    );
    expect(finished.at(-1)).toBe('[DONE]');
    expect(JSON.parse(finished.at(-2)!).choices[0]).toMatchObject({ delta: {}, finish_reason: 'stop' });

    for (const choices of [[null], [{ index: 0, delta: 'x' }], [{ index: 0, delta: { tool_calls: 5 } }]]) {
      const events = await stream(hello + chunk({ choices }) + 'data: [DONE]\n\n');
      expect(events).not.toContain('[DONE]');
      expect(JSON.parse(events[0]!).choices[0].delta.content).toBe('hello');
      const last = JSON.parse(events.at(-1)!);
      expect(last.error.code).toBe('upstream_error');
      expect(last.error.message).toMatch(/not deltas/);
      expect(await reservationsOpen()).toBe('0');
    }
  });
});
