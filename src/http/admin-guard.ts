/**
 * The admin token check of `/admin` and `/metrics`, with failed attempts throttled per client address: after
 * `maxFailures` wrong tokens within WINDOW_MS, every admin request from that address is answered 429 (the right
 * token too, so a guess can never be told apart) until the oldest failure leaves the window. The count is kept
 * per process: with N replicas an address gets at most N times the allowance. Logged with the address, never the
 * token.
 */
import type { FastifyRequest } from 'fastify';
import { GatewayError } from '../errors/index.js';
import { bearerToken } from './deps.js';

const WINDOW_MS = 15 * 60_000;
/** Addresses remembered at most; beyond it the longest-known is forgotten first. */
const MAX_ADDRESSES = 100_000;

export class AdminGuard {
  private readonly failures = new Map<string, number[]>();

  constructor(
    private readonly isAdminToken: (presented: string | undefined) => boolean,
    private readonly maxFailures: number,
  ) {}

  /** Throws the contract's 401 for a missing or wrong token, 429 with Retry-After for a throttled address. */
  check(request: FastifyRequest, wrongTokenMessage = 'Invalid admin token'): void {
    const header = request.headers.authorization;
    const now = Date.now();
    const recent = this.recentFailures(request.ip, now);
    if (recent.length >= this.maxFailures) {
      const retryAfter = Math.max(1, Math.ceil((recent[0]! + WINDOW_MS - now) / 1000));
      request.log.warn(
        { ip: request.ip, path: request.url, failures: recent.length },
        'admin authentication throttled',
      );
      throw new GatewayError('rate_limit_exceeded', {
        message: 'Too many failed admin authentications from this address; try again later',
        retryAfter,
      });
    }
    if (this.isAdminToken(bearerToken(header))) return;
    if (!header) throw new GatewayError('missing_api_key', { message: 'No admin token provided' });
    this.remember(request.ip, [...recent, now]);
    request.log.warn({ ip: request.ip, path: request.url, failures: recent.length + 1 }, 'admin authentication failed');
    throw new GatewayError('invalid_api_key', { message: wrongTokenMessage });
  }

  private recentFailures(ip: string, now: number): number[] {
    const times = this.failures.get(ip);
    if (!times) return [];
    const recent = times.filter((t) => t > now - WINDOW_MS);
    if (recent.length === 0) this.failures.delete(ip);
    return recent;
  }

  private remember(ip: string, times: number[]): void {
    this.failures.delete(ip);
    if (this.failures.size >= MAX_ADDRESSES) this.failures.delete(this.failures.keys().next().value!);
    this.failures.set(ip, times.slice(-this.maxFailures));
  }
}
