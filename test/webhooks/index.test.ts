/** The subscription index (what `wants` answers), filters and envelopes: pure data, no server. */
import { describe, expect, it } from 'vitest';
import { llmEvent } from '../../src/events/index.js';
import type { WebhookRecord } from '../../src/storage/index.js';
import { matchesFilters, toEnvelope } from '../../src/webhooks/envelope.js';
import { SubscriptionIndex } from '../../src/webhooks/outbox.js';

const webhook = (id: string, accountId: string, events: WebhookRecord['events']): WebhookRecord => ({
  id,
  accountId,
  url: 'https://example.com/',
  secret: 's'.repeat(32),
  events,
  headers: {},
  timeoutMs: 10_000,
  retry: { maxAttempts: 3, initialDelay: 1000, maxDelay: 30_000, backoffMultiplier: 2 },
  description: null,
  createdAt: 0,
  updatedAt: 0,
});

describe('SubscriptionIndex', () => {
  it('answers per account and per type; wildcards leave out llm.streaming.chunk', () => {
    const index = new SubscriptionIndex();
    expect(index.wants('llm.completion')).toBe(false);
    index.replace([
      webhook('wh_a', 'acct_a', [{ type: 'llm.*' }]),
      webhook('wh_b', 'acct_b', [{ type: 'credit.low_balance' }, { type: 'llm.streaming.chunk' }]),
      webhook('wh_c', 'acct_c', [{ type: '*' }]),
    ]);
    expect(index.size).toBe(3);
    expect(index.wants('llm.completion', 'acct_a')).toBe(true);
    expect(index.wants('llm.streaming.chunk', 'acct_a')).toBe(false);
    expect(index.wants('credit.low_balance', 'acct_a')).toBe(false);
    expect(index.wants('llm.completion', 'acct_b')).toBe(false);
    expect(index.wants('llm.streaming.chunk', 'acct_b')).toBe(true);
    expect(index.wants('credit.low_balance', 'acct_c')).toBe(true);
    expect(index.wants('llm.streaming.chunk', 'acct_c')).toBe(false);
    expect(index.wants('llm.error', 'acct_nobody')).toBe(false);
    expect(index.wants('llm.streaming.chunk')).toBe(true);
    expect(index.subscribers('acct_a', 'llm.error').map((w) => w.id)).toEqual(['wh_a']);
    index.replace([]);
    expect(index.wants('llm.streaming.chunk')).toBe(false);
    expect(index.size).toBe(0);
  });
});

describe('filters and envelopes', () => {
  const event = llmEvent('llm.completion', 'acct_a', 'key_a', {
    requestId: 'req_1',
    userId: 'u',
    model: 'gpt-4o-mini',
    prompt: 'p',
    completion: 'c',
    tokens: { prompt: 1, completion: 1, total: 2 },
    metadata: { environment: 'live' },
  });
  const envelope = toEnvelope(event, 'evt_1');

  it('builds the 6.2 envelope', () => {
    expect(envelope).toEqual({
      id: 'evt_1',
      timestamp: new Date(event.at).toISOString(),
      event: 'llm.completion',
      data: event.data,
    });
  });

  it('matches every filter exactly on dotted paths', () => {
    expect(matchesFilters(undefined, envelope)).toBe(true);
    expect(matchesFilters({ 'data.model': 'gpt-4o-mini' }, envelope)).toBe(true);
    expect(matchesFilters({ 'data.model': 'gpt-4o-mini', 'data.metadata.environment': 'live' }, envelope)).toBe(true);
    expect(matchesFilters({ 'data.model': 'gpt-4o' }, envelope)).toBe(false);
    expect(matchesFilters({ 'data.model': 'gpt-4o-mini', 'data.metadata.environment': 'test' }, envelope)).toBe(false);
    expect(matchesFilters({ 'data.tokens.total': 2 }, envelope)).toBe(true);
    expect(matchesFilters({ 'data.tokens.total': '2' }, envelope)).toBe(false);
    expect(matchesFilters({ 'data.missing.path': null }, envelope)).toBe(false);
  });

  it('gives credit.low_balance the fields of spec 6.1 and the envelope', () => {
    const low = toEnvelope(
      {
        type: 'credit.low_balance',
        created: 1_800_000_000,
        accountId: 'acct_a',
        keyId: 'key_a',
        balanceNano: 999_999_000n,
        thresholdNano: 1_000_000_000n,
      },
      'evt_2',
    );
    expect(low).toEqual({
      id: 'evt_2',
      type: 'credit.low_balance',
      event: 'credit.low_balance',
      created: 1_800_000_000,
      timestamp: new Date(1_800_000_000_000).toISOString(),
      data: {
        balance: { credits: 0.999999, currency: 'USD' },
        threshold: 1,
        api_key_id: 'key_a',
        account_id: 'acct_a',
      },
    });
  });
});
