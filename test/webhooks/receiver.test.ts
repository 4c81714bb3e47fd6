/** The receiver library against the receiver rules 1-6 of spec 6.2, each with a case that must be rejected. */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { isEventType, signWebhook, verifyWebhook } from '../../src/webhooks/receiver/index.js';

const SECRET = 'whsec_0123456789abcdefghijklmnopqrstuv';
const NOW = 1_800_000_000;
const iso = (seconds: number) => new Date(seconds * 1000).toISOString();

const completion = (overrides: Record<string, unknown> = {}, data: Record<string, unknown> = {}) =>
  JSON.stringify({
    id: 'evt_1',
    timestamp: iso(NOW - 10),
    event: 'llm.completion',
    data: { requestId: 'req_1', userId: 'u1', model: 'gpt-4o-mini', prompt: 'Hi', completion: 'Hello', ...data },
    ...overrides,
  });

/** Signs independently of the library: hex HMAC-SHA-256 of `<timestamp>.<raw body>`. */
const sign = (body: string, timestamp: number | string, secret = SECRET) =>
  createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');

const headersFor = (body: string, timestamp: number | string = NOW) => ({
  'x-webhook-signature': sign(body, timestamp),
  'x-webhook-timestamp': String(timestamp),
});

const verify = (body: string, headers: Record<string, string>, options: { maxAgeSeconds?: number } = {}) =>
  verifyWebhook(body, headers, SECRET, { now: NOW, ...options });

describe('verifyWebhook', () => {
  it('accepts a correctly signed, fresh, complete delivery and returns the typed event', () => {
    const body = completion();
    const result = verify(body, headersFor(body));
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(isEventType(result.event, 'llm.completion')).toBe(true);
    if (isEventType(result.event, 'llm.completion')) expect(result.event.data.completion).toBe('Hello');
  });

  it('accepts Buffers, mixed-case headers, Fetch Headers and an explicit sha256 algorithm', () => {
    const body = completion();
    const h = headersFor(body);
    expect(verify(Buffer.from(body) as unknown as string, h).ok).toBe(true);
    expect(
      verifyWebhook(
        body,
        { 'X-Webhook-Signature': h['x-webhook-signature'], 'X-Webhook-Timestamp': h['x-webhook-timestamp'] },
        SECRET,
        { now: NOW },
      ).ok,
    ).toBe(true);
    expect(verifyWebhook(body, new Headers({ ...h, 'X-Webhook-Algorithm': 'sha256' }), SECRET, { now: NOW }).ok).toBe(
      true,
    );
  });

  it('rule 1: rejects a missing signature or timestamp', () => {
    const body = completion();
    const { 'x-webhook-signature': signature, 'x-webhook-timestamp': timestamp } = headersFor(body);
    expect(verify(body, { 'x-webhook-timestamp': timestamp })).toMatchObject({
      ok: false,
      reason: 'missing_signature',
    });
    expect(verify(body, { 'x-webhook-signature': signature })).toMatchObject({
      ok: false,
      reason: 'missing_timestamp',
    });
    expect(verify(body, { 'x-webhook-signature': '', 'x-webhook-timestamp': timestamp })).toMatchObject({
      ok: false,
      reason: 'missing_signature',
    });
  });

  it('rule 2: rejects a timestamp that is not an integer', () => {
    const body = completion();
    for (const bad of ['1800000000.5', 'abc', '-1800000000', '1e9', ' 1800000000']) {
      expect(verify(body, { 'x-webhook-signature': sign(body, bad), 'x-webhook-timestamp': bad })).toMatchObject({
        ok: false,
        reason: 'invalid_timestamp',
      });
    }
  });

  it('rule 3: rejects a timestamp older than the maximum age (default 300 s, configurable)', () => {
    const body = completion();
    expect(verify(body, headersFor(body, NOW - 300)).ok).toBe(true);
    expect(verify(body, headersFor(body, NOW - 301))).toMatchObject({ ok: false, reason: 'timestamp_too_old' });
    expect(verify(body, headersFor(body, NOW - 301), { maxAgeSeconds: 600 }).ok).toBe(true);
    expect(verify(body, headersFor(body, NOW - 61), { maxAgeSeconds: 60 })).toMatchObject({
      ok: false,
      reason: 'timestamp_too_old',
    });
  });

  it('rule 4: rejects a signature that differs (other secret, changed body, changed timestamp, truncated)', () => {
    const body = completion();
    const good = headersFor(body);
    expect(
      verify(body, { ...good, 'x-webhook-signature': sign(body, NOW, 'another-secret-another-secret-000') }),
    ).toMatchObject({ ok: false, reason: 'invalid_signature' });
    expect(verify(body.replace('Hello', 'Hellp'), good)).toMatchObject({ ok: false, reason: 'invalid_signature' });
    expect(verify(body, { ...good, 'x-webhook-timestamp': String(NOW - 1) })).toMatchObject({
      ok: false,
      reason: 'invalid_signature',
    });
    expect(verify(body, { ...good, 'x-webhook-signature': good['x-webhook-signature'].slice(0, 20) })).toMatchObject({
      ok: false,
      reason: 'invalid_signature',
    });
    expect(verify(body, { ...good, 'x-webhook-algorithm': 'sha1' })).toMatchObject({
      ok: false,
      reason: 'unsupported_algorithm',
    });
  });

  it('rule 5: rejects an envelope without id, timestamp, event or data, or with a timestamp more than 1 hour away', () => {
    for (const field of ['id', 'timestamp', 'event', 'data']) {
      const body = completion({ [field]: undefined });
      expect(verify(body, headersFor(body))).toMatchObject({ ok: false, reason: 'invalid_payload' });
    }
    const notJson = 'not json';
    expect(verify(notJson, headersFor(notJson))).toMatchObject({ ok: false, reason: 'invalid_payload' });
    const old = completion({ timestamp: iso(NOW - 3601) });
    expect(verify(old, headersFor(old))).toMatchObject({ ok: false, reason: 'stale_payload' });
    const future = completion({ timestamp: iso(NOW + 3601) });
    expect(verify(future, headersFor(future))).toMatchObject({ ok: false, reason: 'stale_payload' });
    const edge = completion({ timestamp: iso(NOW - 3599) });
    expect(verify(edge, headersFor(edge)).ok).toBe(true);
  });

  it('rule 6: llm.completion requires requestId, prompt, completion, model; llm.error requires requestId, error.code, error.message', () => {
    for (const field of ['requestId', 'prompt', 'completion', 'model']) {
      const body = completion({}, { [field]: undefined });
      const result = verify(body, headersFor(body));
      expect(result).toMatchObject({ ok: false, reason: 'missing_fields' });
      if (!result.ok) expect(result.message).toContain(field);
    }
    const error = (data: Record<string, unknown>) =>
      completion({ event: 'llm.error' }, { completion: undefined, ...data });
    const good = error({ error: { code: 'upstream_error', message: 'boom' } });
    expect(verify(good, headersFor(good)).ok).toBe(true);
    for (const data of [
      { error: { code: 'x' } },
      { error: { message: 'x' } },
      { error: undefined },
      { requestId: undefined, error: { code: 'x', message: 'y' } },
    ]) {
      const body = error(data);
      expect(verify(body, headersFor(body))).toMatchObject({ ok: false, reason: 'missing_fields' });
    }
    // Other types need only the envelope.
    const chunk = JSON.stringify({
      id: 'e',
      timestamp: iso(NOW),
      event: 'llm.streaming.chunk',
      data: { requestId: 'r', streamId: 's', chunkIndex: 0, content: 'x' },
    });
    expect(verify(chunk, headersFor(chunk)).ok).toBe(true);
  });

  it('refuses parsed JSON instead of the raw body', () => {
    expect(() => verifyWebhook({} as unknown as string, {}, SECRET)).toThrow(TypeError);
  });
});

describe('signWebhook', () => {
  it('produces the headers of spec 6.2, verifiable independently with crypto', () => {
    const body = completion();
    const headers = signWebhook(body, SECRET, { timestamp: NOW });
    expect(headers).toEqual({
      'content-type': 'application/json',
      'x-webhook-signature': sign(body, NOW),
      'x-webhook-timestamp': String(NOW),
      'x-webhook-algorithm': 'sha256',
    });
    expect(verify(body, headers).ok).toBe(true);
  });
});
