/**
 * First start: the HMAC secret for stored keys, the admin token and a first account with a live key. Only the
 * process that claims the empty database creates them (replicas starting together agree on one).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Config } from '../config/index.js';
import type { Storage } from '../storage/index.js';
import type { AdminService } from './service.js';

export interface FirstStart {
  /** Printed once: the generated admin token (absent when TOLLGATE_ADMIN_TOKEN is set). */
  adminToken?: string;
  accountId: string;
  email: string;
  apiKey: string;
}

const FIRST_EMAIL = 'owner@localhost';

export async function keySecret(storage: Storage, config: Config): Promise<string> {
  return config.key_secret ?? storage.meta.getOrInsert('key_secret', randomBytes(32).toString('hex'));
}

export async function bootstrap(
  storage: Storage,
  config: Config,
  admin: AdminService,
): Promise<FirstStart | undefined> {
  if (!(await storage.meta.claim('bootstrapped_at', new Date().toISOString()))) return undefined;
  let adminToken: string | undefined;
  if (!config.admin_token) {
    adminToken = `tgadm-${randomBytes(24).toString('base64url')}`;
    await storage.meta.set('admin_token_sha256', sha256(adminToken));
  }
  const { account, key } = await admin.createAccount({ email: FIRST_EMAIL });
  return { ...(adminToken ? { adminToken } : {}), accountId: account.id, email: account.email, apiKey: key.key };
}

/** Checks a presented admin token against TOLLGATE_ADMIN_TOKEN or the stored hash, in constant time. */
export async function adminTokenChecker(
  storage: Storage,
  config: Config,
): Promise<(presented: string | undefined) => boolean> {
  const expected = config.admin_token ? sha256(config.admin_token) : await storage.meta.get('admin_token_sha256');
  return (presented) => {
    if (!expected || !presented) return false;
    return timingSafeEqual(Buffer.from(sha256(presented), 'hex'), Buffer.from(expected, 'hex'));
  };
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
