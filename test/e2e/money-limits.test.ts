/**
 * Every limit a user sets holds against every byte sent upstream: fields other than `messages` are counted, an
 * upstream's usage is billed at most at what the request allowed, and a settlement never passes a spend limit or
 * a daily limit, even when the estimate was low. The upstream is a local server speaking OpenAI's wire format.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../src/config/index.js';
import { DEFAULT_MODELS } from '../../src/config/default-catalog.js';
import { countTextTokens } from '../../src/tokens/index.js';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../support/gateway.js';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.js';
import { describeEach } from '../support/backends.js';
import { REDIS_TEST_URL } from '../support/redis.js';

const UPSTREAM_KEY = 'sk-upstream-limits';
/** 1 USD per 1,000 tokens either way: small token counts make visible money. */
const PRICEY: ModelConfig = {
  ...DEFAULT_MODELS.find((m) => m.provider === 'openai')!,
  id: 'pricey-test-model',
  aliases: [],
  upstream_model: 'pricey-upstream',
  name: 'Pricey',
  pricing: { prompt: 1, completion: 1 },
};
const CHEAP = DEFAULT_MODELS.find((m) => m.id === 'gpt-6-luna')!;

let mock: MockOpenAI;
let gw: TestGateway;

const toNano = (usd: number) => BigInt(Math.round(usd * 1e9));

/** An answer whose usage says exactly what the test wants the upstream to claim. */
function answerWithUsage(promptTokens: number, completionTokens: number) {
  return {
    kind: 'raw' as const,
    body: JSON.stringify({
      id: 'chatcmpl-upstream',
      object: 'chat.completion',
      created: 1_790_000_000,
      model: 'pricey-upstream',
      choices: [{ index: 0, message: { role: 'assistant', content: 'Hello.' }, finish_reason: 'stop' }],
      usage: {
        prompt_tokens: promptTokens,
        completion_tokens: completionTokens,
        total_tokens: promptTokens + completionTokens,
      },
    }),
  };
}

function streamWithUsage(promptTokens: number, completionTokens: number) {
  const chunk = (fields: object) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-s', object: 'chat.completion.chunk', created: 1_790_000_000, model: 'pricey-upstream', ...fields })}\n\n`;
  return {
    kind: 'raw' as const,
    headers: { 'content-type': 'text/event-stream' },
    body:
      chunk({ choices: [{ index: 0, delta: { role: 'assistant', content: 'Hello.' }, finish_reason: null }] }) +
      chunk({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] }) +
      chunk({
        choices: [],
        usage: {
          prompt_tokens: promptTokens,
          completion_tokens: completionTokens,
          total_tokens: promptTokens + completionTokens,
        },
      }) +
      'data: [DONE]\n\n',
  };
}

function chat(key: string, body: object): Promise<Response> {
  return fetch(`${gw.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

async function ledgerDebits(accountId: string): Promise<bigint> {
  const ledger = await gw.admin('GET', `/admin/accounts/${accountId}/ledger?limit=500`);
  expect(ledger.status).toBe(200);
  return (ledger.body.data as Array<{ type?: string; kind?: string; amount: number }>)
    .filter((entry) => (entry.type ?? entry.kind) === 'debit')
    .reduce((sum, entry) => sum - toNano(entry.amount), 0n);
}

async function cappedMetric(): Promise<number> {
  const res = await fetch(`${gw.url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  const match = /^tollgate_usage_capped_total\{model="pricey-test-model"\} (\S+)$/m.exec(await res.text());
  return match ? Number(match[1]) : 0;
}

/** Prose of about `chars` characters, four characters or so a token. */
function prose(chars: number): string {
  let text = '';
  for (let i = 0; text.length < chars; i++) text += `Item ${i} describes a plain and ordinary thing. `;
  return text.slice(0, chars);
}

function functionsOf(bytes: number) {
  const functions = [];
  for (let i = 0, size = 0; size < bytes; i++) {
    const fn = {
      name: `tool_${i}`,
      description: prose(400),
      parameters: { type: 'object', properties: { value: { type: 'string', description: prose(200) } } },
    };
    functions.push(fn);
    size += JSON.stringify(fn).length + 1;
  }
  return functions;
}

const CONFIGURATIONS: Array<{ name: string; dialect: 'sqlite' | 'postgres'; env: Record<string, string> }> = [
  { name: 'SQLite, holds in memory', dialect: 'sqlite', env: {} },
  {
    name: 'PostgreSQL, holds shared in Redis',
    dialect: 'postgres',
    env: { REDIS_URL: REDIS_TEST_URL, TOLLGATE_REDIS_PREFIX: `tgtest:limits:${process.pid}:${Date.now()}:` },
  },
];

describeEach(CONFIGURATIONS)('on $name', ({ dialect, env }) => {
  beforeAll(async () => {
    mock = await startMockOpenAI({ apiKey: UPSTREAM_KEY });
    gw = await startGateway({
      dialect,
      env: { ...env, OPENAI_API_KEY: UPSTREAM_KEY, OPENAI_BASE_URL: mock.url },
      overrides: { models: [PRICEY] },
    });
  });

  afterAll(async () => {
    await gw?.close();
    await mock?.close();
  });

  beforeEach(() => mock.setBehavior({ kind: 'ok' }));

  describe('fields that go upstream are counted', () => {
    it('refuses a project key whose 54 KB `functions` field its spend limit cannot pay, before calling the upstream', async () => {
      const account = await gw.account({ plan: 'pay_as_you_go' });
      const key = await gw.key(account.id, { permissions: 'project', spend_limit: 0.001 });
      const functions = functionsOf(54 * 1024);
      // An honest upstream counts the functions it was sent.
      mock.setBehavior(answerWithUsage(Math.ceil(JSON.stringify(functions).length / 4), 5));
      const before = mock.requests.length;
      const res = await chat(key.key, {
        model: CHEAP.id,
        max_tokens: 5,
        functions,
        messages: [{ role: 'user', content: 'Hi' }],
      });
      expect(res.status).toBe(403);
      expect(((await res.json()) as any).error.code).toBe('key_limit_exceeded');
      expect(mock.requests.length).toBe(before);
      expect(await ledgerDebits(account.id)).toBeLessThanOrEqual(toNano(0.001));
    });

    it('counts `functions` against the tokens-per-minute limit (3.5 MB on a 100k TPM plan is refused)', async () => {
      const account = await gw.account({ plan: 'free' });
      const before = mock.requests.length;
      const res = await chat(account.key, {
        model: CHEAP.id,
        max_tokens: 5,
        functions: functionsOf(3.5 * 1024 * 1024),
        messages: [{ role: 'user', content: 'Hi' }],
      });
      expect(res.status).toBe(429);
      expect(((await res.json()) as any).error.code).toBe('rate_limit_exceeded');
      expect(mock.requests.length).toBe(before);
    });

    it('bills unknown fields, at the top and inside messages, when the upstream reports no usage', async () => {
      const account = await gw.account({ plan: 'pay_as_you_go' });
      mock.setBehavior({ kind: 'ok', content: 'Hello.', usage: false });
      const topBlob = prose(20_000);
      const messageBlob = prose(12_000);
      const res = await chat(account.key, {
        model: CHEAP.id,
        max_tokens: 5,
        vendor_context: topBlob,
        messages: [{ role: 'user', content: 'Hi', attachment: { text: messageBlob } }],
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as any;
      // Both blobs went upstream, so both are prompt.
      expect(mock.requests.at(-1)!.body.vendor_context).toBe(topBlob);
      expect(body.usage.prompt_tokens).toBeGreaterThanOrEqual(countTextTokens(topBlob) + countTextTokens(messageBlob));
    });
  });

  describe('a settlement bills at most what the request allowed', () => {
    it('charges 5 completion tokens when an upstream claims 1,000,000 for max_tokens 5, and counts it', async () => {
      const account = await gw.account({ plan: 'pay_as_you_go' });
      await gw.setBalance(account.id, 10);
      const before = await cappedMetric();
      mock.setBehavior(answerWithUsage(20, 1_000_000));
      const res = await chat(account.key, {
        model: PRICEY.id,
        max_tokens: 5,
        messages: [{ role: 'user', content: 'Hi' }],
      });
      expect(res.status).toBe(200);
      const body = (await res.json()) as any;
      expect(body.usage.completion_tokens).toBe(5);
      // 20 + 5 tokens at 1 USD per 1,000.
      expect(body.usage.cost).toBe(0.025);
      expect(await ledgerDebits(account.id)).toBe(toNano(0.025));
      expect(await cappedMetric()).toBe(before + 1);
    });

    it('does the same for a stream, in the usage chunk and the ledger', async () => {
      const account = await gw.account({ plan: 'pay_as_you_go' });
      await gw.setBalance(account.id, 10);
      mock.setBehavior(streamWithUsage(20, 1_000_000));
      const res = await chat(account.key, {
        model: PRICEY.id,
        max_tokens: 5,
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: 'user', content: 'Hi' }],
      });
      expect(res.status).toBe(200);
      const events = (await res.text()).split('\n\n').filter((e) => e.startsWith('data: {'));
      const usage = JSON.parse(events.at(-1)!.slice(6)).usage;
      expect(usage.completion_tokens).toBe(5);
      expect(usage.cost).toBe(0.025);
      expect(await ledgerDebits(account.id)).toBe(toNano(0.025));
    });

    it('never passes the daily limit, even when the upstream honestly counts more prompt tokens than tollgate did', async () => {
      // The free plan's daily limit is 5 USD; the balance could pay far more.
      const account = await gw.account({ plan: 'free' });
      await gw.setBalance(account.id, 100);
      const text = prose(12_000);
      const estimate = countTextTokens(text);
      expect(estimate).toBeLessThan(4_000);
      // Another tokenizer may count up to a token a byte: 12,000 tokens = 12 USD at this price.
      mock.setBehavior(answerWithUsage(12_000, 5));
      const res = await chat(account.key, {
        model: PRICEY.id,
        max_tokens: 5,
        messages: [{ role: 'user', content: text }],
      });
      expect(res.status).toBe(200);
      expect(await ledgerDebits(account.id)).toBeLessThanOrEqual(toNano(5));
      const next = await chat(account.key, {
        model: PRICEY.id,
        max_tokens: 5,
        messages: [{ role: 'user', content: 'Hi' }],
      });
      expect(next.status).toBe(429);
      expect(((await next.json()) as any).error.code).toBe('daily_limit_exceeded');
    });

    it('never passes a project key spend limit either', async () => {
      const account = await gw.account({ plan: 'pay_as_you_go' });
      await gw.setBalance(account.id, 100);
      const key = await gw.key(account.id, { permissions: 'project', spend_limit: 1 });
      mock.setBehavior(answerWithUsage(3_000, 5));
      const res = await chat(key.key, {
        model: PRICEY.id,
        max_tokens: 5,
        messages: [{ role: 'user', content: prose(2_400) }],
      });
      expect(res.status).toBe(200);
      expect(await ledgerDebits(account.id)).toBeLessThanOrEqual(toNano(1));
    });
  });

  describe('max_tokens and max_completion_tokens together', () => {
    it('holds for the larger and lowers both when the balance cannot pay it, saying so in a header', async () => {
      const account = await gw.account({ plan: 'pay_as_you_go' });
      // 0.2 USD pays for about 200 tokens at this price.
      await gw.setBalance(account.id, 0.2);
      const res = await chat(account.key, {
        model: PRICEY.id,
        max_tokens: 50_000,
        max_completion_tokens: 10,
        messages: [{ role: 'user', content: 'Hi' }],
      });
      expect(res.status).toBe(200);
      const lowered = Number(res.headers.get('x-tollgate-max-tokens-lowered'));
      expect(lowered).toBeGreaterThan(0);
      expect(lowered).toBeLessThan(200);
      const sent = mock.requests.at(-1)!.body;
      expect(sent.max_tokens).toBe(lowered);
      expect(sent.max_completion_tokens).toBe(lowered);
    });

    it('sends no header when nothing was lowered', async () => {
      const account = await gw.account({ plan: 'pay_as_you_go' });
      const res = await chat(account.key, {
        model: CHEAP.id,
        max_tokens: 5,
        messages: [{ role: 'user', content: 'Hi' }],
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-tollgate-max-tokens-lowered')).toBeNull();
    });
  });
});
