/** API key format `<prefix>-<live|test>-<32 base62>`: generation, shape check, HMAC hash, display hint. */
import { createHmac, randomInt } from 'node:crypto';
import type { Environment } from '../storage/index.js';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const RANDOM_LENGTH = 32;

export function generateKey(prefix: string, environment: Environment): string {
  let random = '';
  for (let i = 0; i < RANDOM_LENGTH; i++) random += BASE62[randomInt(62)];
  return `${prefix}-${environment}-${random}`;
}

export function keyPattern(prefix: string): RegExp {
  return new RegExp(`^${prefix}-(live|test)-[0-9A-Za-z]{${RANDOM_LENGTH}}$`);
}

/** HMAC-SHA-256 with the server secret: a stolen database alone cannot confirm a guessed key. */
export function hashKey(secret: string, key: string): string {
  return createHmac('sha256', secret).update(key).digest('hex');
}

/** The first 12 and last 4 characters, for display. */
export function keyHint(key: string): string {
  return `${key.slice(0, 12)}...${key.slice(-4)}`;
}
