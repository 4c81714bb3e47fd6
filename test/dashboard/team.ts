/** Test set-up for teams before invitations exist: a member row written directly, and a session as that member. */
import { createHash, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import type { Role } from '../../src/storage/index.js';
import type { TestGateway } from '../support/gateway.js';
import { DashboardClient } from './client.js';

/** Makes `userId` a member of `accountId` with `role` (the row an accepted invitation writes). */
export async function addMember(gateway: TestGateway, accountId: string, userId: string, role: Role): Promise<void> {
  const values = [accountId, userId, role, Date.now()];
  const insert = 'INSERT INTO members (account_id, user_id, role, created_at) VALUES';
  const { databaseUrl, dataDir } = gateway.database;
  if (databaseUrl) {
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    await client.query(`${insert} ($1, $2, $3, $4)`, values).finally(() => client.end());
    return;
  }
  const db = new Database(join(dataDir, 'tollgate.db'));
  db.pragma('busy_timeout = 5000');
  db.prepare(`${insert} (?, ?, ?, ?)`).run(...values);
  db.close();
}

/** A dashboard client signed in as `userId`, looking at `accountId`. */
export async function sessionAs(gateway: TestGateway, accountId: string, userId: string): Promise<DashboardClient> {
  const client = new DashboardClient(gateway.url);
  const cookie = randomBytes(32).toString('base64url');
  const csrf = randomBytes(32).toString('base64url');
  const now = Date.now();
  await gateway.app.storage.users.createSession({
    tokenHash: createHash('sha256').update(cookie).digest('hex'),
    accountId,
    userId,
    csrfToken: csrf,
    createdAt: now,
    expiresAt: now + 3_600_000,
  });
  client.cookies.set('tg_session', cookie);
  client.csrf = csrf;
  return client;
}
