/** What of an upstream's text a client may see, and what the server log keeps. */
import { describe, expect, it } from 'vitest';
import { redactCredentials, redactForClient } from '../../src/providers/index.js';

describe('redactForClient', () => {
  it('removes credentials in every shape an upstream or proxy may echo', () => {
    const cases: Array<[string, string]> = [
      ['Authorization: Bearer sk-proj-abc123def456', 'Authorization: [redacted]'],
      ['{"authorization":"Bearer abc.def123"}', '{"authorization":"[redacted]"}'],
      ['got bearer eyJhbGciOi.J9x2 in header', 'got bearer [redacted] in header'],
      ['{"x-api-key":"sk-ant-api03-xyz"}', '{"x-api-key":"[redacted]"}'],
      ['x-goog-api-key=AIzaSyA-1234567890abcdefghijklmnopqr', 'x-goog-api-key=[redacted]'],
      ['key sk-live-0123456789abcdef was refused', 'key [redacted] was refused'],
      ['GET /v1beta/models?key=AIzaSy123&alt=sse failed', 'GET /v1beta/models?key=[redacted]&alt=sse failed'],
      ['see https://user:hunter2@api.example.com/v1', 'see https://api.example.com/v1'],
      ['token 0123456789abcdefABCDEF0123456789xyz leaked', 'token [redacted] leaked'],
    ];
    for (const [text, expected] of cases) expect(redactForClient(text), text).toBe(expected);
  });

  it('removes addresses: IPv4, IPv6, host:port and internal host names in URLs', () => {
    const cases: Array<[string, string]> = [
      ['connect ECONNREFUSED 127.0.0.1:9', 'connect ECONNREFUSED [address]'],
      ['connect ECONNREFUSED ::1:9', 'connect ECONNREFUSED [address]'],
      ['via [fd00::1]:443 and ::ffff:10.0.0.1', 'via [address] and [address]'],
      ['at vllm.svc.cluster.local:8000 now', 'at [address] now'],
      ['GET http://upstream:8080/v1/chat failed', 'GET http://[address]/v1/chat failed'],
      ['GET http://models.internal/v1 failed', 'GET http://[address]/v1 failed'],
      ['GET http://10.0.0.5/v1 failed', 'GET http://[address]/v1 failed'],
    ];
    for (const [text, expected] of cases) expect(redactForClient(text), text).toBe(expected);
  });

  it('leaves ordinary validation messages and public documentation links alone', () => {
    for (const text of [
      "Invalid value for 'top_logprobs': too many.",
      'messages.0.content: Field required',
      'max_tokens: 200000 > 64000, which is the maximum allowed number of output tokens',
      'Missing bearer authentication in header',
      'See https://platform.openai.com/docs/guides/error-codes for details.',
      'Foo::Bar at 12:30:45',
    ]) {
      expect(redactForClient(text)).toBe(text);
    }
  });

  it('cuts long text', () => {
    expect(redactForClient('x '.repeat(2000)).length).toBeLessThanOrEqual(1001);
  });
});

describe('redactCredentials', () => {
  it('keeps addresses for the operator and removes credentials', () => {
    expect(redactCredentials('ECONNREFUSED 127.0.0.1:9; Authorization: Bearer sk-abc12345678')).toBe(
      'ECONNREFUSED 127.0.0.1:9; Authorization: [redacted]',
    );
  });
});
