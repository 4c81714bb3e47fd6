/**
 * How often the official SDKs, with their default retries, call the gateway for one request: once when it cannot
 * succeed (401, 402), again after `Retry-After` when it may (429, 503). Counted on the gateway's side, by its
 * `tollgate_requests_total` metric, per route and status.
 */
import Anthropic, { AuthenticationError, PaymentRequiredError } from '@anthropic-ai/sdk';
import OpenAI, { type APIError, AuthenticationError as OpenAIAuthenticationError } from 'openai';
import { describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, startGateway } from '../support/gateway.js';
import {
  UNKNOWN_KEY,
  brokeKey,
  clientGatewayPerFile,
  expectRetriedAfterTwoSeconds,
  gateway,
  recordingFetch,
  retryAfterKey,
} from './support.js';

clientGatewayPerFile();

const CHAT = '/v1/chat/completions';
const MESSAGES = '/v1/messages';
const chat = { model: 'sandbox/echo', messages: [{ role: 'user' as const, content: 'hi' }] };
const message = { ...chat, max_tokens: 20 };

/** The gateway's count of answers per status on `route`, read from /metrics. */
async function answered(url: string, route: string): Promise<Record<string, number>> {
  // A request is counted when its response closes, just after the client has read it.
  await new Promise((resolve) => setTimeout(resolve, 50));
  const response = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  const counts: Record<string, number> = {};
  const pattern = new RegExp(`^tollgate_requests_total\\{route="${route}",status="(\\d+)"\\} (\\d+)$`, 'gm');
  for (const [, status, count] of (await response.text()).matchAll(pattern)) counts[status!] = Number(count);
  return counts;
}

/** What the gateway answered on `route` while `run` ran: the difference of its counts, per status. */
async function seenByGateway(url: string, route: string, run: () => Promise<unknown>): Promise<Record<string, number>> {
  const before = await answered(url, route);
  await run();
  const after = await answered(url, route);
  const seen: Record<string, number> = {};
  for (const [status, count] of Object.entries(after)) {
    if (count !== (before[status] ?? 0)) seen[status] = count - (before[status] ?? 0);
  }
  return seen;
}

const openai = (apiKey: string, options: Partial<ConstructorParameters<typeof OpenAI>[0]> = {}) =>
  new OpenAI({ baseURL: gateway.baseURL, apiKey, ...options });
const anthropic = (apiKey: string, options: Partial<ConstructorParameters<typeof Anthropic>[0]> = {}) =>
  new Anthropic({ baseURL: gateway.url, apiKey, ...options });

describe('the SDKs with their default retries', () => {
  it('openai: a bad key is one request', async () => {
    let failure: unknown;
    const seen = await seenByGateway(gateway.url, CHAT, async () => {
      failure = await openai(UNKNOWN_KEY)
        .chat.completions.create(chat)
        .catch((e: unknown) => e);
    });
    expect(failure).toBeInstanceOf(OpenAIAuthenticationError);
    expect((failure as OpenAIAuthenticationError).headers.get('x-should-retry')).toBe('false');
    expect(seen).toEqual({ '401': 1 });
  });

  it('@anthropic-ai/sdk: a bad key and an empty balance are one request each', async () => {
    const broke = await brokeKey(gateway);
    const failures: unknown[] = [];
    const seen = await seenByGateway(gateway.url, MESSAGES, async () => {
      failures.push(
        await anthropic(UNKNOWN_KEY)
          .messages.create(message)
          .catch((e: unknown) => e),
      );
      failures.push(
        await anthropic(broke)
          .messages.create(message)
          .catch((e: unknown) => e),
      );
    });
    expect(failures[0]).toBeInstanceOf(AuthenticationError);
    expect(failures[1]).toBeInstanceOf(PaymentRequiredError);
    expect((failures[1] as PaymentRequiredError).headers.get('x-should-retry')).toBe('false');
    expect(seen).toEqual({ '401': 1, '402': 1 });
  });

  it('openai and @anthropic-ai/sdk retry a 429 after its Retry-After, and get the answer', async () => {
    const forOpenAI = await retryAfterKey(gateway);
    const recorded = recordingFetch(forOpenAI.onResponse);
    const seen = await seenByGateway(gateway.url, CHAT, () =>
      openai(forOpenAI.key, { fetch: recorded.fetch }).chat.completions.create(chat),
    );
    expectRetriedAfterTwoSeconds(recorded.seen);
    expect(seen).toEqual({ '429': 1, '200': 1 });

    gateway.limiter.reset();
    const forAnthropic = await retryAfterKey(gateway);
    const anthropicRecorded = recordingFetch(forAnthropic.onResponse);
    const anthropicSeen = await seenByGateway(gateway.url, MESSAGES, () =>
      anthropic(forAnthropic.key, { fetch: anthropicRecorded.fetch }).messages.create(message),
    );
    expectRetriedAfterTwoSeconds(anthropicRecorded.seen);
    expect(anthropicSeen).toEqual({ '429': 1, '200': 1 });
  });

  it('openai retries a model that nobody can serve now (503) after Retry-After: 1, twice', async () => {
    // No provider keys: the catalog's OpenAI models are unavailable to live keys.
    const keyless = await startGateway();
    try {
      const { key } = await keyless.account();
      const { fetch, seen: received } = recordingFetch();
      let failure: unknown;
      const seen = await seenByGateway(keyless.url, CHAT, async () => {
        failure = await new OpenAI({ baseURL: keyless.baseURL, apiKey: key, fetch }).chat.completions
          .create({ ...chat, model: 'gpt-6-luna' })
          .catch((e: unknown) => e);
      });
      expect((failure as APIError).status).toBe(503);
      expect(seen).toEqual({ '503': 3 });
      expect(received.map((r) => r.retryAfter)).toEqual(['1', '1', '1']);
      expect(received[2]!.at - received[0]!.at).toBeGreaterThanOrEqual(1_950);
    } finally {
      await keyless.close();
    }
  });
});
