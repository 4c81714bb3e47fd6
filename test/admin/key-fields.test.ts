/** The governance fields' checks every key path shares: exact amounts, real dates, canonical CIDRs, rates in bounds. */
import { describe, expect, it } from 'vitest';
import { keyChangesOf, type KeyFieldContext } from '../../src/admin/key-fields.js';
import { GatewayError } from '../../src/errors/index.js';

const NOW = Date.parse('2026-11-28T12:00:00Z');
const creating: KeyFieldContext = {
  accountLimits: { requestsPerMinute: 60, tokensPerMinute: 10_000 },
  now: NOW,
  creating: true,
};
const updating: KeyFieldContext = { ...creating, creating: false };

/** The param of the 400 that `fields` get, or the changes when accepted. */
function outcome(fields: Record<string, unknown>, context = creating) {
  try {
    return keyChangesOf(fields, context);
  } catch (error) {
    if (!(error instanceof GatewayError)) throw error;
    expect(error.status).toBe(400);
    return { refused: error.param };
  }
}

describe('keyChangesOf', () => {
  it('turns each field into what the key stores: nano-USD, Unix ms, canonical CIDRs', () => {
    expect(
      outcome({
        name: '  ci  ',
        limit: 0.000000001,
        limit_reset: 'monthly',
        expires_at: '2027-01-31',
        requests_per_minute: 60,
        tokens_per_minute: 1,
        allowed_ips: ['10.1.2.3/16', '10.1.0.0/16', '::ffff:0:0/96', '2001:DB8::1'],
      }),
    ).toEqual({
      name: 'ci',
      spendLimitNano: 1n,
      limitReset: 'monthly',
      expiresAt: Date.parse('2027-01-31T00:00:00Z'),
      requestsPerMinute: 60,
      tokensPerMinute: 1,
      allowedIps: ['10.1.0.0/16', '::ffff:0:0/96', '2001:db8::1/128'],
    });
    expect(outcome({ expires_at: '2027-01-31T10:00:00+02:00' })).toEqual({
      expiresAt: Date.parse('2027-01-31T08:00:00Z'),
    });
  });

  it('takes null as "none" and leaves absent fields absent', () => {
    expect(
      outcome(
        { limit: null, limit_reset: null, expires_at: null, requests_per_minute: null, allowed_ips: [] },
        updating,
      ),
    ).toEqual({ spendLimitNano: null, limitReset: null, expiresAt: null, requestsPerMinute: null, allowedIps: [] });
    expect(outcome({}, updating)).toEqual({});
  });

  it('accepts spend_limit as the former name of limit, and refuses the two disagreeing', () => {
    expect(outcome({ spend_limit: 2 })).toEqual({ spendLimitNano: 2_000_000_000n });
    expect(outcome({ spend_limit: 2, limit: 2 })).toEqual({ spendLimitNano: 2_000_000_000n });
    expect(outcome({ spend_limit: 2, limit: 3 })).toEqual({ refused: 'spend_limit' });
  });

  it.each([
    [{ limit: 0.0000000001 }, 'limit'],
    [{ limit: -1 }, 'limit'],
    [{ spend_limit: 'lots' }, 'spend_limit'],
    [{ limit_reset: 'hourly' }, 'limit_reset'],
    [{ expires_at: '2026-11-28T11:59:59Z' }, 'expires_at'],
    [{ expires_at: 'tomorrow' }, 'expires_at'],
    [{ expires_at: '2027-02-30T00:00:00Z' }, 'expires_at'],
    [{ expires_at: '2027-01-31T00:00:00' }, 'expires_at'],
    [{ requests_per_minute: 61 }, 'requests_per_minute'],
    [{ requests_per_minute: 0 }, 'requests_per_minute'],
    [{ tokens_per_minute: 1.5 }, 'tokens_per_minute'],
    [{ allowed_ips: ['10.0.0.0/33'] }, 'allowed_ips'],
    [{ allowed_ips: ['256.0.0.1'] }, 'allowed_ips'],
    [{ allowed_ips: [''] }, 'allowed_ips'],
    [{ allowed_ips: Array.from({ length: 101 }, (_, i) => `10.0.0.${i % 256}`) }, 'allowed_ips'],
    [{ allowed_ips: '10.0.0.0/8' }, 'allowed_ips'],
  ])('refuses %j naming %s', (fields, param) => {
    expect(outcome(fields)).toEqual({ refused: param });
  });

  it('lets a PATCH end a key now (an expiry in the past) but never leave it nameless', () => {
    expect(outcome({ expires_at: '2020-01-01T00:00:00Z' }, updating)).toEqual({
      expiresAt: Date.parse('2020-01-01T00:00:00Z'),
    });
    expect(outcome({ name: '   ' }, updating)).toEqual({ refused: 'name' });
  });
});
