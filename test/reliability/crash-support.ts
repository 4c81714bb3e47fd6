/**
 * The crash scenario shared by crash-sqlite.test.ts and crash-postgres.test.ts: a gateway process with 100 slow
 * requests in flight (half streaming) and a stream of fast ones completing around it is killed with SIGKILL,
 * then started again on the same data.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { startChildGateway, type ChildGateway } from '../support/child-gateway.js';
import type { TestDatabase } from '../support/databases.js';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.js';

export const MODEL = 'gpt-6-luna';
export const IN_FLIGHT = 100;

export interface Outcome {
  requestId: string;
  /** The client got the whole answer (JSON, or a stream up to [DONE]) and was told this cost. */
  costNano?: bigint;
  stream: boolean;
}

export interface Crash {
  gateway: ChildGateway;
  mock: MockOpenAI;
  accounts: Array<{ id: string; key: string }>;
  /** Reservations open just before the kill, as /metrics showed them. */
  openBeforeKill: number;
  /** Every request that got an answer (complete or not) before the kill. */
  outcomes: Outcome[];
  killedAt: number;
  close(): Promise<void>;
}

export async function reservationsOpen(gateway: ChildGateway): Promise<number> {
  const { body } = await gateway.admin('GET', '/metrics');
  return Number(/^tollgate_reservations_open(?:\{[^}]*\})? (\S+)$/m.exec(String(body))![1]);
}

export function chat(gateway: ChildGateway, key: string, body: object): Promise<Response> {
  return fetch(`${gateway.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, max_tokens: 200, ...body }),
  });
}

/** Reads an answer to the end; the cost when it was complete, undefined when the connection broke first. */
async function readAnswer(res: Response, stream: boolean): Promise<bigint | undefined> {
  const text = await res.text();
  if (res.status !== 200) return undefined;
  if (!stream) return BigInt(Math.round(JSON.parse(text).usage.cost * 1e9));
  const events = text
    .split('\n\n')
    .filter((e) => e.startsWith('data: '))
    .map((e) => e.slice(6));
  if (events[events.length - 1] !== '[DONE]') return undefined;
  return BigInt(Math.round(JSON.parse(events[events.length - 2]!).usage.cost * 1e9));
}

export async function crash(database: TestDatabase, env: Record<string, string> = {}): Promise<Crash> {
  // Slow answers: JSON after 4 s, streams of 40 chunks 100 ms apart; the fast ones ("quick") at once.
  const mock = await startMockOpenAI({
    apiKey: 'sk-crash',
    route: (body) =>
      String(body.messages[0].content).startsWith('quick')
        ? { kind: 'ok', chunks: 3 }
        : body.stream
          ? { kind: 'ok', chunks: 40, delayMs: 100 }
          : { kind: 'ok', latencyMs: 4_000 },
  });
  const gateway = await startChildGateway({
    dataDir: database.dataDir,
    adminToken: `crash-admin-${randomBytes(8).toString('hex')}`,
    env: {
      ...(database.databaseUrl ? { DATABASE_URL: database.databaseUrl } : {}),
      OPENAI_API_KEY: 'sk-crash',
      OPENAI_BASE_URL: mock.url,
      ...env,
    },
  });
  const accounts: Array<{ id: string; key: string }> = [];
  for (let i = 0; i < 5; i++) {
    const { status, body } = await gateway.admin('POST', '/admin/accounts', {
      email: `crash${i}@example.com`,
      plan: 'enterprise',
    });
    if (status !== 201) throw new Error(`account: ${status} ${JSON.stringify(body)}`);
    accounts.push({ id: body.id, key: body.api_key });
  }

  const outcomes: Outcome[] = [];
  const track = (key: string, body: object, stream: boolean) =>
    chat(gateway, key, { ...body, stream, ...(stream ? { stream_options: { include_usage: true } } : {}) })
      .then(async (res) => {
        const outcome: Outcome = { requestId: res.headers.get('x-request-id')!, stream };
        outcomes.push(outcome);
        const cost = await readAnswer(res, stream).catch(() => undefined);
        if (cost !== undefined) outcome.costNano = cost;
      })
      .catch(() => undefined); // the connection broke before the headers

  // Some answers completed well before the crash.
  for (let i = 0; i < 10; i++)
    await track(accounts[4]!.key, { messages: [{ role: 'user', content: `quick ${i}` }] }, i % 2 === 0);

  // 100 slow requests in flight, half streaming, over four accounts.
  const slow = Array.from({ length: IN_FLIGHT }, (_, i) =>
    track(
      accounts[i % 4]!.key,
      { messages: [{ role: 'user', content: `slow ${i}: write a long story` }] },
      i % 2 === 0,
    ),
  );
  // Fast requests keep completing until the kill, so some commits are under way when it lands.
  let killed = false;
  const quick = (async () => {
    for (let i = 0; !killed; i++) {
      await Promise.all(
        [0, 1, 2, 3].map((j) =>
          track(accounts[4]!.key, { messages: [{ role: 'user', content: `quick ${i}.${j}` }] }, j % 2 === 0),
        ),
      );
    }
  })();

  const deadline = Date.now() + 20_000;
  while (
    (await reservationsOpen(gateway)) < IN_FLIGHT ||
    mock.requests.filter((r) => String(r.body.messages?.[0]?.content).startsWith('slow') && r.eventsSent >= 3).length <
      IN_FLIGHT / 2
  ) {
    if (Date.now() > deadline) throw new Error('the slow requests did not all get under way');
    await sleep(50);
  }
  const openBeforeKill = await reservationsOpen(gateway);
  await gateway.kill('SIGKILL');
  const killedAt = Date.now();
  killed = true;
  await Promise.all([...slow, quick]);
  // The ledger is read once the killed process's sessions are gone: a COMMIT it had sent may land a moment later.
  const open = await database.untilSessionsEnd(10_000);
  if (open > 0) throw new Error(`${open} sessions of the killed gateway still open 10 s after the kill`);

  return {
    gateway,
    mock,
    accounts,
    openBeforeKill,
    outcomes,
    killedAt,
    async close() {
      await gateway.kill('SIGKILL');
      await mock.close();
      await database.drop();
    },
  };
}
