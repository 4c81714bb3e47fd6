/**
 * JSON nested deeper than the bound (docs/api.md#request-bodies) is refused with 400 when the body is parsed, on
 * the chat endpoint and on Fastify's routes; it never reaches an upstream, never gives a 500, and never counts
 * against a provider's health (one account cannot open the circuit every account shares).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultConfig } from '../../src/config/index.js';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../support/gateway.js';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.js';

const MODEL = 'gpt-6-luna';
const DEPTH = 5_000;

let mock: MockOpenAI;
let gw: TestGateway;

beforeAll(async () => {
  mock = await startMockOpenAI({ apiKey: 'sk-deep' });
  gw = await startGateway({
    env: { OPENAI_API_KEY: 'sk-deep', OPENAI_BASE_URL: mock.url },
    // One counted failure would open the circuit for the whole test.
    overrides: {
      routing: { ...defaultConfig().routing, retries: 0, breaker_failures: 1, breaker_cooldown_ms: 600_000 },
    },
  });
});

afterAll(async () => {
  await gw?.close();
  await mock?.close();
});

const nested = (depth: number, leaf = '1') => '['.repeat(depth) + leaf + ']'.repeat(depth);

async function post(path: string, text: string, headers: Record<string, string>) {
  const response = await fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: text,
  });
  return { status: response.status, body: (await response.json()) as any };
}

function chatBody(deep: string, where: 'field' | 'audio'): string {
  const content =
    where === 'audio' ? `[{"type":"input_audio","input_audio":{"data":${deep},"format":"wav"}}]` : '"Say hello"';
  const extra = where === 'field' ? `,"metadata_x":${deep}` : '';
  return `{"model":"${MODEL}","messages":[{"role":"user","content":${content}}]${extra}}`;
}

describe('JSON nested deeper than the bound', () => {
  const cases = [
    { name: 'an unknown field', where: 'field' as const, idempotent: false },
    { name: 'an unknown field, with Idempotency-Key', where: 'field' as const, idempotent: true },
    { name: 'an input_audio part', where: 'audio' as const, idempotent: false },
    { name: 'an input_audio part, with Idempotency-Key', where: 'audio' as const, idempotent: true },
  ];

  it.each(cases)(
    'in $name: 400 on /v1/chat/completions, and the model stays available to everyone',
    async ({ where, idempotent }) => {
      const attacker = await gw.account();
      const before = mock.requests.length;
      const headers: Record<string, string> = { authorization: `Bearer ${attacker.key}` };
      if (idempotent) headers['idempotency-key'] = `deep-${where}-${Date.now()}`;
      for (let i = 0; i < 3; i++) {
        const sent = await post('/v1/chat/completions', chatBody(nested(DEPTH), where), headers);
        expect(sent.status, JSON.stringify(sent.body)).toBe(400);
        expect(sent.body.error.code).toBe('invalid_request');
        expect(sent.body.error.message).toMatch(/nested more than 64 levels deep/);
      }
      expect(mock.requests.length).toBe(before);

      const other = await gw.account();
      const answer = await post('/v1/chat/completions', chatBody('1', 'field'), {
        authorization: `Bearer ${other.key}`,
      });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    },
  );

  it('accepts nesting up to the bound', async () => {
    const { key } = await gw.account();
    const sent = await post('/v1/chat/completions', chatBody(nested(60), 'field'), { authorization: `Bearer ${key}` });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
  });

  it('is refused on the Fastify routes too (admin, webhooks)', async () => {
    const { key } = await gw.account();
    const admin = await post('/admin/accounts', `{"email":"deep@example.com","metadata":${nested(DEPTH)}}`, {
      authorization: `Bearer ${ADMIN_TOKEN}`,
    });
    expect(admin.status, JSON.stringify(admin.body)).toBe(400);
    expect(admin.body.error.message).toMatch(/nested more than 64 levels deep/);
    const webhooks = await post('/v1/webhooks', `{"url":"https://example.com/hook","x":${nested(DEPTH, '{}')}}`, {
      authorization: `Bearer ${key}`,
    });
    expect(webhooks.status, JSON.stringify(webhooks.body)).toBe(400);
    expect(webhooks.body.error.message).toMatch(/nested more than 64 levels deep/);
  });
});
