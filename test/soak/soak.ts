/**
 * Soak test: mixed traffic against a real gateway process (`node dist/main.js`, SQLite) in front of a local mock
 * upstream that fails about 10 % of the requests on purpose. Passes when, over the whole run:
 *   - no request got a 5xx the gateway caused (the injected upstream faults must give 502/504 or, after the first
 *     byte, the stream's error event; every other request must succeed);
 *   - the gateway's RSS after warm-up grew by at most 10 % (each read right after a full GC, forced through the
 *     gateway's inspector);
 *   - no reservation is left open, the ledger invariants hold (test/support/ledger-audit.ts) and every answered
 *     request was debited exactly the `usage.cost` it was told.
 *
 *   node --import tsx test/soak/soak.ts --duration 60      (CI; also --concurrency N, --warmup S)
 *
 * The first `--warmup` seconds (default a tenth of the run, 20 to 60 s; part of the duration) run at four times the
 * concurrency so that the heap reaches its working size; memory is compared from its end to the end of the run.
 *
 * Prints its figures; exits 1 on any failure. dist/ must be built (`npm run build`).
 */
import { randomBytes } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { WebSocket } from 'undici';
import { tempDir } from '../support/databases.js';
import { startChildGateway } from '../support/child-gateway.js';
import { auditLedger } from '../support/ledger-audit.js';
import { startMockOpenAI, type Behavior } from '../support/mock-openai.js';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '60' },
    concurrency: { type: 'string', default: '16' },
    warmup: { type: 'string' },
  },
});
const durationS = Number(values.duration);
const concurrency = Number(values.concurrency);
const warmupS = Number(values.warmup ?? Math.min(60, Math.max(20, Math.round(durationS / 10))));
const MODEL = 'gpt-6-luna';
const ACCOUNTS = 8;

/** The injected faults (about 10 % of requests), and what the client must see for each. */
const FAULTS: Array<{ name: string; behavior: Behavior; status: number; midStream: boolean }> = [
  { name: '500', behavior: { kind: 'error', status: 500 }, status: 502, midStream: false },
  { name: '503', behavior: { kind: 'error', status: 503, retryAfter: 1 }, status: 502, midStream: false },
  { name: '429', behavior: { kind: 'error', status: 429 }, status: 502, midStream: false },
  { name: 'invalid-json', behavior: { kind: 'raw', body: '{"choices": [oops' }, status: 502, midStream: false },
  { name: 'cut', behavior: { kind: 'cut', afterChunks: 2 }, status: 502, midStream: true },
  { name: 'malformed', behavior: { kind: 'malformed', afterChunks: 2 }, status: 502, midStream: true },
];

interface Tally {
  requests: number;
  ok: number;
  injected: number;
  gateway5xx: number;
  wrong: number;
  byStatus: Map<number, number>;
  /** request id -> cost (nano-USD) the client was told, for answered requests. */
  told: Map<string, bigint>;
  /** Streams that failed after the first byte (debited for what they delivered). */
  partial: Set<string>;
  examples: string[];
}

const tally: Tally = {
  requests: 0,
  ok: 0,
  injected: 0,
  gateway5xx: 0,
  wrong: 0,
  byStatus: new Map(),
  told: new Map(),
  partial: new Set(),
  examples: [],
};
const nano = (usd: number) => BigInt(Math.round(usd * 1e9));

function problem(text: string): void {
  tally.wrong++;
  if (tally.examples.length < 10) tally.examples.push(text);
}

async function one(base: string, key: string, n: number): Promise<void> {
  const stream = n % 2 === 0;
  const fault = Math.random() < 0.1 ? FAULTS[Math.floor(Math.random() * FAULTS.length)]! : undefined;
  const content = `Request ${n}: tell me something.${fault ? ` [fault:${fault.name}]` : ''}`;
  const body = {
    model: MODEL,
    messages: [{ role: 'user', content }],
    max_tokens: 64,
    stream,
    ...(stream ? { stream_options: { include_usage: true } } : {}),
  };
  tally.requests++;
  if (fault) tally.injected++;
  const res = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  const requestId = res.headers.get('x-request-id') ?? '?';
  tally.byStatus.set(res.status, (tally.byStatus.get(res.status) ?? 0) + 1);
  const expected = fault ? (fault.midStream && stream ? 200 : fault.status) : 200;
  if (res.status >= 500 && res.status !== expected) tally.gateway5xx++;
  if (res.status !== expected)
    return problem(`${requestId} ${fault?.name ?? 'ok'} stream=${stream}: ${res.status} ${text.slice(0, 200)}`);
  if (res.status !== 200) {
    const error = JSON.parse(text).error;
    if (error?.type !== 'upstream_error') problem(`${requestId}: envelope ${text.slice(0, 200)}`);
    return;
  }
  if (!stream) {
    tally.ok++;
    tally.told.set(requestId, nano(JSON.parse(text).usage.cost));
    return;
  }
  const events = text
    .split('\n\n')
    .filter((e) => e.startsWith('data: '))
    .map((e) => e.slice(6));
  if (fault) {
    const last = events[events.length - 1] ?? '';
    if (events.includes('[DONE]') || !last.includes('"error"'))
      problem(`${requestId}: stream without its error event: ${text.slice(-200)}`);
    tally.partial.add(requestId);
    return;
  }
  if (events[events.length - 1] !== '[DONE]')
    return problem(`${requestId}: stream without [DONE]: ${text.slice(-200)}`);
  const usage = JSON.parse(events[events.length - 2]!).usage;
  tally.ok++;
  tally.told.set(requestId, nano(usage.cost));
}

async function main(): Promise<number> {
  const mock = await startMockOpenAI({
    apiKey: 'sk-soak',
    route: (body) => {
      const text = String(body.messages?.[body.messages.length - 1]?.content ?? '');
      const name = /\[fault:([\w-]+)\]/.exec(text)?.[1];
      return name ? FAULTS.find((f) => f.name === name)!.behavior : undefined;
    },
    behavior: { kind: 'ok', chunks: 8, delayMs: 2, latencyMs: 2 },
  });
  const dataDir = tempDir('tollgate-soak-');
  const config = join(dataDir, 'soak.yaml');
  // Retries short; the breaker out of the way (10 % faults would open it, which is right but not what is measured).
  writeFileSync(
    config,
    [
      'routing: { retries: 1, backoff_ms: 5, max_backoff_ms: 20, breaker_failures: 1000000, breaker_cooldown_ms: 1000 }',
      'server: { upstream_timeout_ms: 5000 }',
      'plans: { soak: { requests_per_minute: 10000000, tokens_per_minute: 1000000000 } }',
    ].join('\n'),
  );
  const gateway = await startChildGateway({
    dataDir,
    adminToken: `soak-admin-${randomBytes(8).toString('hex')}`,
    env: { TOLLGATE_CONFIG: config, OPENAI_API_KEY: 'sk-soak', OPENAI_BASE_URL: mock.url, TOLLGATE_LOG_LEVEL: 'error' },
    // The inspector lets the soak force a full garbage collection before it reads the RSS it compares.
    nodeArgs: ['--inspect=127.0.0.1:0'],
  });
  const inspector = /Debugger listening on (ws:\/\/\S+)/.exec(gateway.output())?.[1];
  /** A full GC in the gateway (through its inspector), then its RSS: the memory it really holds. */
  const settledRss = async (): Promise<number> => {
    if (!inspector) throw new Error('no inspector URL in the gateway output');
    const socket = new WebSocket(inspector);
    await new Promise((resolve, reject) => {
      socket.addEventListener('open', resolve);
      socket.addEventListener('error', reject);
    });
    const done = new Promise((resolve) => socket.addEventListener('message', resolve));
    socket.send(JSON.stringify({ id: 1, method: 'HeapProfiler.collectGarbage' }));
    await done;
    socket.close();
    await new Promise((r) => setTimeout(r, 500));
    return gateway.rss();
  };
  const failures: string[] = [];
  try {
    const keys: string[] = [];
    for (let i = 0; i < ACCOUNTS; i++) {
      const account = await gateway.admin('POST', '/admin/accounts', { email: `soak${i}@example.com`, plan: 'soak' });
      await gateway.admin('POST', `/admin/accounts/${account.body.id}/credits`, { amount: 10_000 });
      keys.push(account.body.api_key);
    }

    const started = Date.now();
    const end = started + durationS * 1000;
    const samples: Array<{ t: number; rss: number }> = [];
    const sampler = setInterval(() => {
      samples.push({ t: (Date.now() - started) / 1000, rss: gateway.rss() });
      if (samples.length % (durationS > 120 ? 60 : 10) === 0)
        console.log(
          `  ${samples.length} s: ${tally.requests} requests, RSS ${(samples[samples.length - 1]!.rss / 1048576).toFixed(1)} MB`,
        );
    }, 1000);
    let n = 0;
    let crashed: unknown;
    const worker = async () => {
      while (Date.now() < end && !crashed) {
        const i = n++;
        await one(gateway.url, keys[i % ACCOUNTS]!, i).catch((error: unknown) => {
          crashed = error;
        });
      }
    };
    // Warm-up at four times the concurrency, so the heap reaches its working size before memory is measured.
    const warm = started + warmupS * 1000;
    const warmer = async () => {
      while (Date.now() < warm && !crashed) {
        const i = n++;
        await one(gateway.url, keys[i % ACCOUNTS]!, i).catch((error: unknown) => {
          crashed = error;
        });
      }
    };
    let baseline = NaN;
    const measure = (async () => {
      await new Promise((r) => setTimeout(r, warm - Date.now()));
      baseline = await settledRss();
    })();
    await Promise.all([
      ...Array.from({ length: concurrency }, worker),
      ...Array.from({ length: 3 * concurrency }, warmer),
      measure,
    ]);
    clearInterval(sampler);
    const elapsed = (Date.now() - started) / 1000;
    if (crashed)
      failures.push(
        `a request failed at the transport level: ${crashed instanceof Error ? String(crashed) : JSON.stringify(crashed)}`,
      );

    // Memory: RSS right after a full GC at the end of the warm-up and at the end of the run (raw RSS saws up and
    // down by a quarter with the collector's rhythm, so single samples say little).
    const final = await settledRss();
    const growth = final / baseline - 1;
    const peak = Math.max(...samples.map((s) => s.rss));
    const mb = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MB`;

    const metrics = await gateway.admin('GET', '/metrics');
    const open = Number(/^tollgate_reservations_open(?:\{[^}]*\})? (\S+)$/m.exec(String(metrics.body))?.[1]);
    await gateway.kill('SIGTERM');
    const audit = await auditLedger({ dialect: 'sqlite', dataDir });

    let mismatched = 0;
    for (const [id, cost] of tally.told) if (audit.debitedRequests.get(id) !== cost) mismatched++;
    const unexpected = [...audit.debitedRequests.keys()].filter(
      (id) => !tally.told.has(id) && !tally.partial.has(id),
    ).length;

    console.log(
      `soak: ${elapsed.toFixed(0)} s, ${concurrency} clients, ${tally.requests} requests (${(tally.requests / elapsed).toFixed(0)}/s), half streaming`,
    );
    console.log(
      `  answered ${tally.ok}, injected upstream faults ${tally.injected} (${((100 * tally.injected) / tally.requests).toFixed(1)} %), statuses ${JSON.stringify(Object.fromEntries(tally.byStatus))}`,
    );
    console.log(`  gateway-caused 5xx: ${tally.gateway5xx}; unexpected answers: ${tally.wrong}`);
    console.log(
      `  RSS after a full GC: after warm-up (${warmupS} s) ${mb(baseline)}, at the end ${mb(final)} (${(growth * 100).toFixed(1)} %); peak RSS ${mb(peak)}`,
    );
    console.log(
      `  ledger: ${audit.ledgerRows} rows, ${audit.debits} debits, ${(Number(audit.debitedNano) / 1e9).toFixed(6)} USD; integrity ${audit.integrity}; open reservations ${open}`,
    );
    console.log(
      `  debits differing from the usage.cost told: ${mismatched}; debits of requests never answered: ${unexpected}`,
    );

    if (tally.gateway5xx > 0) failures.push(`${tally.gateway5xx} gateway-caused 5xx`);
    if (tally.wrong > 0) failures.push(`${tally.wrong} unexpected answers, e.g.\n    ${tally.examples.join('\n    ')}`);
    if (!(growth <= 0.1)) failures.push(`RSS grew ${(growth * 100).toFixed(1)} % after warm-up`);
    if (open !== 0) failures.push(`${open} reservations open at the end`);
    if (audit.problems.length) failures.push(`ledger: ${audit.problems.slice(0, 10).join('; ')}`);
    if (mismatched) failures.push(`${mismatched} debits differ from the cost the client was told`);
    if (unexpected) failures.push(`${unexpected} debits of requests that were never answered`);
    if (tally.ok === 0 || tally.injected === 0) failures.push('no traffic');
  } catch (error) {
    failures.push(String((error as Error).stack ?? error));
  } finally {
    await gateway.kill('SIGKILL');
    await mock.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
  if (failures.length) {
    console.log(`soak FAILED:\n  - ${failures.join('\n  - ')}\n${gateway.output().slice(-4000)}`);
    return 1;
  }
  console.log('soak passed');
  return 0;
}

process.exitCode = await main();
