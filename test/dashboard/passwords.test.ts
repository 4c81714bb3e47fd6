/** Passwords are stored as salted scrypt hashes, never as given. */
import { afterAll, beforeAll, expect, test } from 'vitest';
import { hashPassword, verifyPassword } from '../../src/dashboard/passwords.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { DashboardClient, uniqueEmail } from './client.js';

let gateway: TestGateway;
beforeAll(async () => {
  gateway = await startGateway();
});
afterAll(() => gateway?.close());

test('scrypt with a random salt: the same password hashes differently, and only it verifies', async () => {
  const [a, b] = await Promise.all([hashPassword('correct horse battery'), hashPassword('correct horse battery')]);
  expect(a).toMatch(/^scrypt\$32768\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
  expect(a).not.toBe(b);
  expect(await verifyPassword('correct horse battery', a)).toBe(true);
  expect(await verifyPassword('correct horse batterY', a)).toBe(false);
  expect(await verifyPassword('correct horse battery', 'plain$text')).toBe(false);
});

test('sign-up stores the scrypt hash, not the password', async () => {
  const password = 'a password nobody should see';
  const { body } = await new DashboardClient(gateway.url).signUp(uniqueEmail('hash'), password);
  const stored = (await gateway.app.storage.users.passwordHash(body.account_id))!;
  expect(stored.startsWith('scrypt$')).toBe(true);
  expect(stored).not.toContain(password);
  expect(await verifyPassword(password, stored)).toBe(true);
});
