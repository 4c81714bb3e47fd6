/** Two gateway processes on one PostgreSQL and Redis: dashboard sessions and sign-in limits hold across them. */
import OpenAI from 'openai';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { needsPostgresAndRedis } from '../support/backends.js';
import { startReplicas, type Replicas } from '../support/replicas.js';
import { DashboardClient, uniqueEmail } from './client.js';

needsPostgresAndRedis('dashboard on two replicas (PostgreSQL + Redis)', () => {
  let replicas: Replicas;
  beforeAll(async () => {
    replicas = await startReplicas(2);
  });
  afterAll(() => replicas?.stop());

  /** The same browser talking to another replica: its cookies and CSRF token go along. */
  function via(client: DashboardClient, base: string): DashboardClient {
    const other = new DashboardClient(base);
    for (const [k, v] of client.cookies) other.cookies.set(k, v);
    other.csrf = client.csrf;
    return other;
  }

  test('a session made on one replica works on the other; a revocation there stops the key everywhere', async () => {
    const [a, b] = replicas.urls as [string, string];
    const onA = new DashboardClient(a);
    expect((await onA.signUp(uniqueEmail('replica'))).status).toBe(201);
    const onB = via(onA, b);
    const created = await onB.request('POST', '/keys', { name: 'made on b' });
    expect(created.status).toBe(201);
    const sdkA = new OpenAI({ apiKey: created.body.key, baseURL: `${a}/v1`, maxRetries: 0 });
    await sdkA.chat.completions.create({ model: 'sandbox/echo', messages: [{ role: 'user', content: 'hi' }] });
    expect((await onB.request('POST', `/keys/${created.body.id}/revoke`)).status).toBe(200);
    const refused = await sdkA.chat.completions
      .create({ model: 'sandbox/echo', messages: [{ role: 'user', content: 'hi' }] })
      .catch((e) => e);
    expect(refused).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((await via(onA, b).request('POST', '/signout')).status).toBe(204);
    expect((await onA.request('GET', '/keys')).status).toBe(401);
  });

  test('sign-in attempts are counted across replicas', async () => {
    const email = uniqueEmail('spread');
    await new DashboardClient(replicas.urls[0]!).signUp(email, 'the right password');
    // Default limit: 10 attempts a minute per email; sign-up was the first.
    for (let i = 0; i < 9; i++) {
      const response = await new DashboardClient(replicas.urls[i % 2]!).signIn(email, `guess ${i}`);
      expect(response.status).toBe(401);
    }
    for (const url of replicas.urls) {
      const response = await new DashboardClient(url).signIn(email, 'the right password');
      expect([response.status, response.body.error?.code]).toEqual([429, 'rate_limit_exceeded']);
    }
  });
});
