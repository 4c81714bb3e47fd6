/**
 * A graceful stop is not held by a connection that never sent a request (undici opens spare ones and keeps them
 * open 4 s): it is closed at once.
 */
import { connect, type Socket } from 'node:net';
import { expect, it } from 'vitest';
import { startGateway } from '../support/gateway.js';

function openIdle(url: string): Promise<Socket> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  return new Promise((resolve, reject) => {
    socket.once('connect', () => resolve(socket));
    socket.once('error', reject);
  });
}

it('stops at once with a connection open that never sent a request', async () => {
  const gateway = await startGateway({});
  const account = await gateway.account({});
  const key = (await gateway.key(account.id, { environment: 'test' })).key;
  const idle = await openIdle(gateway.url);
  const idleClosed = new Promise<void>((resolve) => idle.once('close', () => resolve()));
  const answer = await fetch(`${gateway.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'sandbox/echo', messages: [{ role: 'user', content: 'served' }] }),
  });
  expect(answer.status).toBe(200);
  const started = performance.now();
  await gateway.close();
  expect(performance.now() - started).toBeLessThan(2_000);
  await idleClosed;
}, 10_000);
