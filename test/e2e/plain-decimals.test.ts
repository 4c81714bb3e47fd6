/** USD amounts below 1e-6 are written as plain decimals (`0.0000002`), never in exponent form, in every JSON answer. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../src/config/index.js';
import { SANDBOX_MODELS } from '../../src/config/default-catalog.js';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../support/gateway.js';

// One nano-USD per token: a short request costs a few dozen nano-USD.
const PENNY: ModelConfig = {
  ...SANDBOX_MODELS[0]!,
  id: 'penny',
  name: 'Penny',
  pricing: { prompt: 0.000001, completion: 0.000001 },
};

let gw: TestGateway;

beforeAll(async () => {
  gw = await startGateway({ overrides: { models: [PENNY] } });
});
afterAll(async () => {
  await gw?.close();
});

async function raw(path: string, token: string, body?: unknown): Promise<{ status: number; text: string }> {
  const response = await fetch(`${gw.url}${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, text: await response.text() };
}

// A number token in exponent form (after `:`, `,` or `[`, so never inside an id string).
const EXPONENT = /[:,[]-?\d+(?:\.\d+)?e[-+]?\d/;

describe('small USD amounts', () => {
  it('a balance of 2e-7 USD reads 0.0000002 in /v1/credits and the admin API', async () => {
    const { id, key } = await gw.account();
    await gw.setBalance(id, 0.0000002);
    const credits = await raw('/v1/credits', key);
    expect(credits.status).toBe(200);
    expect(credits.text).toContain('"balance":{"credits":0.0000002,');
    expect(credits.text).not.toMatch(EXPONENT);
    const admin = await raw(`/admin/accounts/${id}`, ADMIN_TOKEN);
    expect(admin.text).toContain('"credits":0.0000002');
    expect(admin.text).not.toMatch(EXPONENT);
  });

  it('a chat completion costing nano-USD reports usage.cost as a plain decimal, in JSON and in the stream', async () => {
    const { key } = await gw.account();
    const request = { model: 'penny', messages: [{ role: 'user', content: 'Say hi' }], max_tokens: 5 };
    const json = await raw('/v1/chat/completions', key, request);
    expect(json.status, json.text).toBe(200);
    expect(json.text).toMatch(/"cost":0\.0000000\d+[,}]/);
    expect(json.text).not.toMatch(EXPONENT);

    const streamed = await raw('/v1/chat/completions', key, {
      ...request,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(streamed.status, streamed.text).toBe(200);
    expect(streamed.text).toMatch(/"cost":0\.0000000\d+[,}]/);
    expect(streamed.text).not.toMatch(EXPONENT);
  });

  it('text that looks like an exponent inside a string is left as it is', async () => {
    const { key } = await gw.account();
    const json = await raw('/v1/chat/completions', key, {
      model: 'penny',
      messages: [{ role: 'user', content: 'x 2e-7 y' }],
      max_tokens: 20,
    });
    expect(json.status, json.text).toBe(200);
    expect(json.text).toContain('x 2e-7 y');
    expect(json.text).toMatch(/"cost":0\.0000000\d+[,}]/);
  });
});
