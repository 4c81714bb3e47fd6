/**
 * What an upstream failure tells the client: a 400-class validation message with credentials and addresses
 * removed, otherwise a fixed message naming the provider and the status. Upstreams here are real local servers
 * speaking OpenAI's and Anthropic's formats that echo the request's headers; Gemini points at a closed port.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultConfig } from '../../src/config/index.js';
import { DEFAULT_MODELS } from '../../src/config/default-catalog.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { startMockAnthropic, type MockAnthropic } from '../support/mock-anthropic.js';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.js';

const OPENAI_KEY = 'sk-proj-upstreamSecret0123456789';
const ANTHROPIC_KEY = 'sk-ant-api03-upstreamSecret0123456789';
const GPT = DEFAULT_MODELS.find((m) => m.provider === 'openai')!.id;
const CLAUDE = DEFAULT_MODELS.find((m) => m.provider === 'anthropic')!.id;
const GEMINI = DEFAULT_MODELS.find((m) => m.provider === 'gemini')!.id;
/** Addresses a client must never see: the mocks' and the closed port's. */
const ADDRESS = /127\.0\.0\.1|10\.1\.2\.3|:\d{2,5}\b|::1|internal/;

let openai: MockOpenAI;
let anthropic: MockAnthropic;
let gateway: TestGateway;
let key: string;
const logLines: string[] = [];

beforeAll(async () => {
  openai = await startMockOpenAI({ apiKey: OPENAI_KEY });
  anthropic = await startMockAnthropic({ apiKey: ANTHROPIC_KEY });
  const logger = pino(
    { level: 'info' },
    new Writable({ write: (line, _encoding, done) => done(void logLines.push(String(line))) }),
  );
  gateway = await startGateway({
    env: {
      OPENAI_API_KEY: OPENAI_KEY,
      OPENAI_BASE_URL: openai.url,
      ANTHROPIC_API_KEY: ANTHROPIC_KEY,
      ANTHROPIC_BASE_URL: anthropic.url,
      GEMINI_API_KEY: 'gm-upstream-secret',
      GEMINI_BASE_URL: 'http://127.0.0.1:9/v1beta',
    },
    overrides: { routing: { ...defaultConfig().routing, retries: 0, breaker_failures: 2 } },
    logger,
  });
  key = (await gateway.account()).key;
});
afterAll(async () => {
  await gateway?.close();
  await openai?.close();
  await anthropic?.close();
});

async function chat(model: string, stream = false): Promise<{ status: number; error: any; text: string }> {
  const response = await fetch(`${gateway.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], stream }),
  });
  const text = await response.text();
  return { status: response.status, error: JSON.parse(text).error, text };
}

function expectNoLeak(text: string): void {
  expect(text).not.toContain(OPENAI_KEY);
  expect(text).not.toContain(ANTHROPIC_KEY);
  expect(text).not.toContain('upstreamSecret');
  expect(text).not.toMatch(ADDRESS);
}

describe('a 400 from the upstream that echoes its request headers', () => {
  it('OpenAI-compatible: 400 with the message, without the upstream key or address', async () => {
    openai.setBehavior({ kind: 'echo-headers', status: 400 });
    for (const stream of [false, true]) {
      const { status, error, text } = await chat(GPT, stream);
      expectNoLeak(text);
      expect(status).toBe(400);
      expect(error).toMatchObject({ code: 'invalid_request', type: 'invalid_request_error' });
      expect(error.message).toMatch(/^The provider 'openai' rejected the request: Invalid request headers: /);
      expect(error.message).toContain('"authorization":"[redacted]"');
    }
    openai.setBehavior({ kind: 'ok' });
  });

  it('Anthropic: 400 with the message, without the x-api-key or address', async () => {
    anthropic.setBehavior({ kind: 'echo-headers', status: 400 });
    const { status, error, text } = await chat(CLAUDE);
    expectNoLeak(text);
    expect(status).toBe(400);
    expect(error.message).toMatch(/^The provider 'anthropic' rejected the request: Invalid request headers: /);
    expect(error.message).toContain('"x-api-key":"[redacted]"');
    anthropic.setBehavior({ kind: 'ok' });
  });
});

describe('upstream failures that are not the client’s', () => {
  it('a 500 naming internal addresses and a key is a fixed 502 message; the log keeps the detail without the key', async () => {
    const detail = `upstream connect error to 10.1.2.3:8080 (http://vllm.internal:8000/v1); Authorization: Bearer ${OPENAI_KEY}`;
    openai.setBehavior({ kind: 'error', status: 500, message: detail });
    for (const stream of [false, true]) {
      const { status, error, text } = await chat(GPT, stream);
      expectNoLeak(text);
      expect(status).toBe(502);
      expect(error).toMatchObject({ code: 'upstream_error', message: "The provider 'openai' failed with status 500" });
    }
    openai.setBehavior({ kind: 'ok' });
    await expect.poll(() => logLines.join('')).toContain('10.1.2.3:8080');
    expect(logLines.join('')).not.toContain(OPENAI_KEY);
  });

  it('an echo of headers in a 5xx from Anthropic is a fixed 502 message', async () => {
    anthropic.setBehavior({ kind: 'echo-headers', status: 529 });
    const { status, error, text } = await chat(CLAUDE);
    expectNoLeak(text);
    expect(status).toBe(502);
    expect(error.message).toBe("The provider 'anthropic' failed with status 529");
    anthropic.setBehavior({ kind: 'ok' });
  });

  it('a provider on a closed port (127.0.0.1:9) is a 502 that does not name the address, nor does the model status', async () => {
    for (const stream of [false, true]) {
      const { status, error, text } = await chat(GEMINI, stream);
      expectNoLeak(text);
      expect(status).toBe(502);
      expect(error).toMatchObject({ code: 'upstream_error', message: "The provider 'gemini' could not be reached" });
    }
    await expect.poll(() => logLines.join('')).toContain('127.0.0.1:9');
    // Two failures opened the circuit: the model's status and the 503 say why, without the address.
    const model = await fetch(`${gateway.baseURL}/models/${GEMINI}`, { headers: { authorization: `Bearer ${key}` } });
    const { message } = ((await model.json()) as any).status;
    expect(message).toMatch(/gemini: connection/);
    expectNoLeak(message);
    const unavailable = await chat(GEMINI);
    expect(unavailable.status).toBe(503);
    expectNoLeak(unavailable.text);
  });
});
