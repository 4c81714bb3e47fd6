/**
 * A refused request costs almost nothing, and a large admitted one does not hold the event loop: a body of many
 * random text parts (the tokenizer's slow end) from a rate-limited key is refused before it is tokenized; an
 * admitted one is counted in slices, so /health keeps answering, and gets the count it would get at once; one
 * tenant's large bodies do not hold back another's (the strict order of turns: test/tokens/sliced.test.ts).
 */
import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countPromptTokens, countTextTokens } from '../../src/tokens/index.js';
import { startGateway, type TestGateway } from '../support/gateway.js';

/** Far above what a healthy event loop needs to answer /health; far below the seconds such a body once blocked it. */
const HEALTH_BOUND_MS = 250;
/** The same for 3 MB bodies, whose JSON parsing alone takes tens of milliseconds (the benchmark measures the 50 ms target). */
const LARGE_BODY_HEALTH_BOUND_MS = 1_000;

let gateway: TestGateway;

beforeAll(async () => {
  gateway = await startGateway({
    overrides: {
      plans: {
        one: { requests_per_minute: 1, tokens_per_minute: 100_000_000 },
        free: { requests_per_minute: 1_000, tokens_per_minute: 100_000_000, daily_limit: 5 },
      },
    },
  });
});
afterAll(async () => gateway?.close());

/** `parts` random base64 texts of `chars` characters: no text repeats, every one is slow to tokenize. */
function randomParts(parts: number, chars = 120): Array<{ type: 'text'; text: string }> {
  return Array.from({ length: parts }, () => ({
    type: 'text',
    text: randomBytes(chars).toString('base64').slice(0, chars),
  }));
}

/** About 80 tokens a part: 1,400 parts stay within the sandbox model's context. */
function chatBody(parts: number) {
  return { model: 'sandbox/echo', max_tokens: 16, messages: [{ role: 'user', content: randomParts(parts) }] };
}

async function post(path: string, key: string, body: unknown) {
  const started = performance.now();
  const response = await fetch(`${gateway.baseURL}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await response.json()) as any;
  return { status: response.status, json, ms: performance.now() - started, at: performance.now() };
}

/** Polls /health every 20 ms until `work` settles; returns the slowest answer's time. */
async function slowestHealthWhile(work: Promise<unknown>): Promise<number> {
  let done = false;
  void work.finally(() => (done = true));
  let slowest = 0;
  while (!done) {
    const started = performance.now();
    const response = await fetch(`${gateway.url}/health`);
    await response.arrayBuffer();
    slowest = Math.max(slowest, performance.now() - started);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await work;
  return slowest;
}

/**
 * Sends the headers of a 3 MB JSON body and its first 64 KiB only, and waits for the answer: it comes only if the
 * server answers without reading the rest of the body.
 */
function answerToFirstPart(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; body: string; sentBytes: number }> {
  const declared = 3 * 1024 * 1024;
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json', 'content-length': declared },
    });
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`${url}: no answer before the rest of the body`));
    }, 5_000);
    req.on('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => {
        clearTimeout(timer);
        req.destroy();
        resolve({ status: res.statusCode!, body, sentBytes: 64 * 1024 });
      });
    });
    req.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    req.write(Buffer.alloc(64 * 1024, ' '));
  });
}

async function testKey(plan?: string): Promise<string> {
  const account = await gateway.account(plan ? { plan } : {});
  return (await gateway.key(account.id, { environment: 'test' })).key;
}

describe('cheap work before expensive work', () => {
  it("refuses a rate-limited key's 3 MB body of random parts at once, without tokenizing it", async () => {
    const key = await testKey('one');
    expect(
      (await post('/chat/completions', key, { model: 'sandbox/echo', messages: [{ role: 'user', content: 'hi' }] }))
        .status,
    ).toBe(200);
    const body = chatBody(25_000);
    expect(JSON.stringify(body).length).toBeGreaterThan(3_000_000);
    const refusals = Promise.all([post('/chat/completions', key, body), post('/chat/completions', key, body)]);
    const slowest = await slowestHealthWhile(refusals);
    for (const refused of await refusals) {
      expect(refused.status).toBe(429);
      expect(refused.json.error.code).toBe('rate_limit_exceeded');
      // Tokenizing this body takes seconds; parsing it, tens of milliseconds.
      expect(refused.ms).toBeLessThan(2_000);
    }
    expect(slowest).toBeLessThan(LARGE_BODY_HEALTH_BOUND_MS);
  });

  it("refuses a rate-limited key's large body on every metered endpoint before reading it", async () => {
    const key = await testKey('one');
    expect(
      (await post('/chat/completions', key, { model: 'sandbox/echo', messages: [{ role: 'user', content: 'hi' }] }))
        .status,
    ).toBe(200);
    const paths = [
      '/chat/completions',
      '/completions',
      '/embeddings',
      '/responses',
      '/messages',
      '/messages/count_tokens',
    ];
    for (const path of paths) {
      const headers: Record<string, string> = path.startsWith('/messages')
        ? { 'x-api-key': key }
        : { authorization: `Bearer ${key}` };
      const answer = await answerToFirstPart(`${gateway.baseURL}${path}`, headers);
      expect(answer, path).toMatchObject({ status: 429, sentBytes: 64 * 1024 });
      expect(answer.body, path).toContain('rate_limit');
    }
  });

  it('counts an admitted large body in slices: /health answers meanwhile, and the count is the one made at once', async () => {
    const key = await testKey();
    const body = chatBody(1_400);
    const answer = post('/chat/completions', key, body);
    const slowest = await slowestHealthWhile(answer);
    const { status, json } = await answer;
    expect(status, JSON.stringify(json)).toBe(200);
    expect(slowest).toBeLessThan(HEALTH_BOUND_MS);
    expect(json.usage.prompt_tokens).toBe(countPromptTokens(body));
  });

  it("bounds Messages' count_tokens the same way", async () => {
    const key = await testKey();
    const body = { model: 'sandbox/echo', messages: [{ role: 'user', content: randomParts(1_400) }] };
    const counted = post('/messages/count_tokens', key, body);
    const slowest = await slowestHealthWhile(counted);
    const { status, json } = await counted;
    expect(status).toBe(200);
    expect(slowest).toBeLessThan(HEALTH_BOUND_MS);
    expect(json.input_tokens).toBe(countPromptTokens(body as never));
  });

  it('bounds 2,048 random embedding inputs the same way', async () => {
    const key = await testKey();
    const inputs = randomParts(2_048, 200).map((part) => part.text);
    const embedded = post('/embeddings', key, { model: 'sandbox/embed', input: inputs, dimensions: 8 });
    const slowest = await slowestHealthWhile(embedded);
    const { status, json } = await embedded;
    expect(status).toBe(200);
    expect(slowest).toBeLessThan(HEALTH_BOUND_MS);
    expect(json.usage.prompt_tokens).toBe(inputs.reduce((sum, text) => sum + countTextTokens(text), 0));
  });

  it("does not make one tenant's large body wait behind another tenant's", async () => {
    const [heavy, light] = [await testKey(), await testKey()];
    const heavyAnswers = Promise.all([1, 2, 3].map(() => post('/chat/completions', heavy, chatBody(1_400))));
    // The heavy bodies arrive first; counted one after the other, they take several times the light one's count.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const lightAnswer = await post('/chat/completions', light, chatBody(150));
    const heavyDone = (await heavyAnswers).sort((a, b) => a.at - b.at);
    expect(lightAnswer.status).toBe(200);
    expect(heavyDone.map((answer) => answer.status)).toEqual([200, 200, 200]);
    expect(lightAnswer.at).toBeLessThan(heavyDone.at(-1)!.at);
  });
});
