/** SSRF address rules and the retry schedule, as pure functions. */
import { describe, expect, it } from 'vitest';
import { BlockedAddressError, isPublicAddress, resolveTarget, retryDelay } from '../../src/webhooks/index.js';
import { EMBEDDING_PRIVATE_IPV4, EMBEDDING_PUBLIC_IPV4 } from './embedded-addresses.js';

describe('isPublicAddress', () => {
  it('refuses loopback, private, link-local, metadata and other non-public addresses', () => {
    for (const address of [
      '127.0.0.1',
      '127.255.0.9',
      '0.0.0.0',
      '10.1.2.3',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.1.1',
      '100.64.0.1',
      '169.254.169.254',
      '169.254.0.1',
      '224.0.0.1',
      '255.255.255.255',
      '::1',
      '::',
      'fe80::1',
      'fc00::1',
      'fd00:ec2::254',
      '::ffff:127.0.0.1',
      '::ffff:169.254.169.254',
      '::ffff:10.0.0.1',
      'not-an-ip',
    ]) {
      expect(isPublicAddress(address), address).toBe(false);
    }
  });

  it('allows public unicast addresses', () => {
    for (const address of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8']) {
      expect(isPublicAddress(address), address).toBe(true);
    }
  });

  it('judges an IPv6 address that embeds IPv4 addresses by every address it embeds', () => {
    for (const address of EMBEDDING_PRIVATE_IPV4) expect(isPublicAddress(address), address).toBe(false);
    for (const address of EMBEDDING_PUBLIC_IPV4) expect(isPublicAddress(address), address).toBe(true);
  });
});

describe('resolveTarget', () => {
  it('refuses names and literals that resolve inside unless private URLs are allowed', async () => {
    for (const url of [
      'http://localhost:8080/hook',
      'http://127.0.0.1/x',
      'http://[::1]:9/x',
      'http://169.254.169.254/latest/meta-data',
      'http://10.0.0.5/',
    ]) {
      await expect(resolveTarget(new URL(url), false), url).rejects.toBeInstanceOf(BlockedAddressError);
    }
    await expect(resolveTarget(new URL('http://127.0.0.1:9/x'), true)).resolves.toEqual({
      address: '127.0.0.1',
      family: 4,
    });
    await expect(resolveTarget(new URL('http://[::1]:9/x'), true)).resolves.toEqual({ address: '::1', family: 6 });
  });
});

describe('retryDelay', () => {
  const retry = { maxAttempts: 5, initialDelay: 1000, maxDelay: 5000, backoffMultiplier: 2 };

  it('is initialDelay * multiplier^(n-1), capped at maxDelay, minus at most 10% jitter', () => {
    expect([1, 2, 3, 4, 5].map((n) => retryDelay(retry, n, () => 0))).toEqual([1000, 2000, 4000, 5000, 5000]);
    expect([1, 2, 3].map((n) => retryDelay(retry, n, () => 1))).toEqual([900, 1800, 3600]);
    for (let i = 0; i < 100; i++) {
      const delay = retryDelay(retry, 3);
      expect(delay).toBeGreaterThanOrEqual(3600);
      expect(delay).toBeLessThanOrEqual(4000);
    }
  });
});
