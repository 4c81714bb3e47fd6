/**
 * Scale-out (issue 4): three gateway processes (`node dist/main.js`) on one PostgreSQL database and one Redis
 * key prefix. Every request is a raw fetch against one replica, as a load balancer would send it.
 *
 * - rpm 60 on an account, 200 requests over the three replicas: exactly 60 succeed.
 * - a key revoked through replica A is refused by B and C within one second.
 * - 300 concurrent requests at an account that can afford ~100: balance never below zero, ledger sum equals
 *   balance, the sum of `usage.cost` equals the debits.
 * - a replica killed with SIGKILL mid-traffic: the others keep answering, the ledger invariant holds, and
 *   the dead replica's holds are released (after restart or by the sweeper), so the account can spend its
 *   whole remaining balance.
 */
import { afterAll, beforeAll, expect, it, onTestFailed } from 'vitest';
import { startReplicas, type Replicas } from '../support/replicas.js';
import { needsPostgresAndRedis } from '../support/backends.js';

// ---------------------------------------------------------------------------------------------------------
// Helpers

/** USD (as JSON gives it, at most 9 decimals) to integer nano-USD. */
const nano = (usd: number): number => Math.round(usd * 1e9);
const usd = (n: number): number => Number((n / 1e9).toFixed(9));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface ChatResult {
  replica: number;
  status: number;
  /** Error code of a refused request, or of an error event inside a stream. */
  code: string | undefined;
  /** usage.cost in nano-USD, when the answer carried usage. */
  costNano: number | undefined;
  usage: any;
  /** A stream that ended with `[DONE]` (always true for a non-streamed 200). */
  done: boolean;
  /** Chunks received on a stream. */
  chunks: number;
  /** Set when the connection failed (e.g. the replica was killed). */
  failure: string | undefined;
}

interface ChatOptions {
  /** Called once, when a stream's first data event arrives. */
  onFirstChunk?: () => void;
}

async function chat(
  replicas: Replicas,
  replica: number,
  key: string,
  body: Record<string, unknown>,
  options: ChatOptions = {},
): Promise<ChatResult> {
  const result: ChatResult = {
    replica,
    status: 0,
    code: undefined,
    costNano: undefined,
    usage: undefined,
    done: false,
    chunks: 0,
    failure: undefined,
  };
  try {
    const response = await fetch(`${replicas.urls[replica]}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    result.status = response.status;
    const type = response.headers.get('content-type') ?? '';
    if (response.status !== 200 || !type.startsWith('text/event-stream')) {
      const json = (await response.json()) as any;
      if (response.status === 200) {
        result.usage = json.usage;
        result.costNano = json.usage?.cost === undefined ? undefined : nano(json.usage.cost);
        result.done = true;
      } else {
        result.code = json.error?.code;
      }
      return result;
    }
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = buffer.indexOf('\n\n')) !== -1) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        for (const line of event.split('\n')) {
          if (!line.startsWith('data: ')) continue;
          const data = line.slice(6);
          if (data === '[DONE]') {
            result.done = true;
            continue;
          }
          const chunk = JSON.parse(data);
          result.chunks++;
          if (result.chunks === 1) options.onFirstChunk?.();
          if (chunk.error) result.code = chunk.error.code;
          if (chunk.usage) {
            result.usage = chunk.usage;
            if (chunk.usage.cost !== undefined) result.costNano = nano(chunk.usage.cost);
          }
        }
      }
    }
  } catch (error) {
    result.failure = String((error as Error).cause ?? error);
  }
  return result;
}

async function createAccount(
  replicas: Replicas,
  patch: Record<string, unknown>,
  via = 0,
): Promise<{ id: string; key: string }> {
  const email = `replicas-${Date.now()}-${Math.random().toString(36).slice(2, 8)}@example.com`;
  const created = await replicas.admin('POST', '/admin/accounts', { email, plan: 'pay_as_you_go' }, via);
  if (created.status !== 201)
    throw new Error(`account creation failed: ${created.status} ${JSON.stringify(created.body)}`);
  const patched = await replicas.admin(
    'PATCH',
    `/admin/accounts/${created.body.id}`,
    { plan: 'pay_as_you_go', daily_limit: 'none', ...patch },
    via,
  );
  if (patched.status !== 200)
    throw new Error(`account patch failed: ${patched.status} ${JSON.stringify(patched.body)}`);
  return { id: created.body.id, key: created.body.api_key };
}

async function balanceNano(replicas: Replicas, accountId: string, via = 0): Promise<number> {
  const { status, body } = await replicas.admin('GET', `/admin/accounts/${accountId}`, undefined, via);
  if (status !== 200) throw new Error(`GET account failed: ${status} ${JSON.stringify(body)}`);
  return nano(body.balance.credits);
}

/** Sets the balance to exactly `target` nano-USD with one top-up or correction. */
async function setBalance(replicas: Replicas, accountId: string, targetNano: number): Promise<void> {
  const delta = targetNano - (await balanceNano(replicas, accountId));
  if (delta === 0) return;
  const { status, body } = await replicas.admin('POST', `/admin/accounts/${accountId}/credits`, { amount: usd(delta) });
  if (status !== 200) throw new Error(`credits failed: ${status} ${JSON.stringify(body)}`);
  expect(nano(body.balance.credits)).toBe(targetNano);
}

/** Every ledger entry of the account, newest first (pages of 500). */
async function ledger(replicas: Replicas, accountId: string, via = 0): Promise<any[]> {
  const entries: any[] = [];
  let before: string | undefined;
  for (;;) {
    const query = `limit=500${before ? `&before=${before}` : ''}`;
    const { status, body } = await replicas.admin(
      'GET',
      `/admin/accounts/${accountId}/ledger?${query}`,
      undefined,
      via,
    );
    if (status !== 200) throw new Error(`ledger failed: ${status} ${JSON.stringify(body)}`);
    entries.push(...body.data);
    if (!body.has_more || body.data.length === 0) return entries;
    before = body.data[body.data.length - 1].id;
  }
}

function histogram(values: Array<number | undefined>): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[String(value)] = (counts[String(value)] ?? 0) + 1;
  return counts;
}

/**
 * What an answer must cost: sandbox models cost 0.00015 and 0.0006 USD per 1k tokens, i.e. exactly 150 and 600
 * nano-USD per prompt and completion token. Every hold in these tests covers the whole answer (the completion
 * bound is sent upstream), so the charge ceiling never applies and each answer is charged its full cost.
 */
const costOfUsage = (usage: any): number => usage.prompt_tokens * 150 + usage.completion_tokens * 600;

const sumNano = (values: Array<number | undefined>) => values.reduce<number>((sum, v) => sum + (v ?? 0), 0);

function tally(results: ChatResult[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of results) {
    const label = r.failure ? 'connection failed' : `${r.status}${r.code ? ` ${r.code}` : ''}`;
    counts[label] = (counts[label] ?? 0) + 1;
  }
  return counts;
}

/** The ledger invariant: entries sum to the balance, every balance_after is >= 0, and returns the debits' sum. */
async function checkLedger(
  replicas: Replicas,
  accountId: string,
): Promise<{ balance: number; debits: number; entries: any[] }> {
  const entries = await ledger(replicas, accountId);
  const balance = await balanceNano(replicas, accountId);
  expect(sumNano(entries.map((e) => nano(e.amount)))).toBe(balance);
  expect(balance).toBeGreaterThanOrEqual(0);
  for (const entry of entries) expect(nano(entry.balance_after)).toBeGreaterThanOrEqual(0);
  const debits = -sumNano(entries.filter((e) => e.kind === 'debit').map((e) => nano(e.amount)));
  return { balance, debits, entries };
}

function showOutputsOnFailure(get: () => Replicas | undefined): void {
  onTestFailed(() => {
    const replicas = get();
    if (replicas) console.error(`replica output:\n${replicas.outputs()}`);
  });
}

// ---------------------------------------------------------------------------------------------------------

needsPostgresAndRedis('three replicas on one PostgreSQL and one Redis', { timeout: 60_000 }, () => {
  let replicas: Replicas | undefined;
  const r = () => replicas!;

  beforeAll(async () => {
    replicas = await startReplicas(3);
  });
  afterAll(async () => {
    await replicas?.stop();
  });

  it('enforces an rpm limit of 60 across the replicas: exactly 60 of 200 requests succeed', async () => {
    showOutputsOnFailure(() => replicas);
    const account = await createAccount(r(), { requests_per_minute: 60 });
    // The promise is that limit changes reach every replica within 1 s.
    await sleep(1_100);

    const started = Date.now();
    const waves = 4;
    const perWave = 50;
    const pending: Array<Promise<ChatResult>> = [];
    for (let wave = 0; wave < waves; wave++) {
      if (wave > 0) await sleep(300);
      for (let j = 0; j < perWave; j++) {
        const n = wave * perWave + j;
        pending.push(
          chat(r(), n % 3, account.key, { model: 'sandbox/echo', messages: [{ role: 'user', content: `hello ${n}` }] }),
        );
      }
    }
    const results = await Promise.all(pending);
    const elapsed = Date.now() - started;
    const counts = tally(results);
    console.info(
      `rpm: ${JSON.stringify(counts)} in ${elapsed} ms; successes per replica: ${[0, 1, 2].map((i) => results.filter((x) => x.replica === i && x.status === 200).length).join('/')}`,
    );

    expect(elapsed).toBeLessThan(30_000);
    expect(results.filter((x) => x.status === 200)).toHaveLength(60);
    const refused = results.filter((x) => x.status !== 200);
    expect(refused).toHaveLength(140);
    for (const x of refused) expect([x.status, x.code]).toEqual([429, 'rate_limit_exceeded']);
  });

  it('refuses a key revoked through replica A on replicas B and C within one second', async () => {
    showOutputsOnFailure(() => replicas);
    const account = await createAccount(r(), {});
    const created = await r().admin('POST', `/admin/accounts/${account.id}/keys`, { name: 'to revoke' }, 0);
    expect(created.status).toBe(201);
    const key: string = created.body.key;
    const request = (i: number) =>
      chat(r(), i, key, { model: 'sandbox/echo', messages: [{ role: 'user', content: 'still valid?' }] });

    // B and C have used (and so cached) the key.
    for (const i of [1, 2, 1, 2]) expect((await request(i)).status).toBe(200);

    const sent = Date.now();
    const revoked = await r().admin('DELETE', `/admin/keys/${created.body.id}`, undefined, 0);
    const answered = Date.now();
    expect(revoked.status).toBe(200);
    expect(revoked.body.revoked).toBe(true);

    const refusedAfter = async (i: number): Promise<number> => {
      for (;;) {
        const result = await request(i);
        if (result.status === 401) {
          expect(result.code).toBe('invalid_api_key');
          return Date.now() - answered;
        }
        expect(result.status).toBe(200);
        if (Date.now() - answered > 5_000) return Infinity;
        await sleep(50);
      }
    };
    const [onA, onB, onC] = await Promise.all([refusedAfter(0), refusedAfter(1), refusedAfter(2)]);
    console.info(
      `revocation: DELETE took ${answered - sent} ms; refused after A ${onA} ms, B ${onB} ms, C ${onC} ms (from the DELETE answer)`,
    );
    expect(onA).toBeLessThan(1_000);
    expect(onB).toBeLessThan(1_000);
    expect(onC).toBeLessThan(1_000);
  });

  it('keeps credits exact under 300 concurrent requests at an account that can afford about 100', async () => {
    showOutputsOnFailure(() => replicas);
    const prompt = 'Write a few words about toll gates on old roads.';
    const body = (stream: boolean) => ({
      model: 'sandbox/lorem',
      messages: [{ role: 'user', content: prompt }],
      max_tokens: 40,
      ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
    });

    // One request's cost, measured on another account (the answer is deterministic for a given prompt).
    const probe = await createAccount(r(), { requests_per_minute: 100_000, tokens_per_minute: 100_000_000 });
    const measured = await chat(r(), 0, probe.key, body(false));
    expect(measured.status).toBe(200);
    const unitNano = measured.costNano!;
    expect(unitNano).toBe(costOfUsage(measured.usage));
    expect(unitNano).toBeGreaterThan(0);
    const streamed = await chat(r(), 1, probe.key, body(true));
    expect(streamed.costNano).toBe(unitNano);

    const account = await createAccount(r(), { requests_per_minute: 100_000, tokens_per_minute: 100_000_000 });
    const startNano = 100 * unitNano;
    await setBalance(r(), account.id, startNano);
    await sleep(1_100);

    // Watch the balance while the burst runs.
    let watching = true;
    let lowest = startNano;
    const watcher = (async () => {
      for (let i = 0; watching; i++) {
        lowest = Math.min(lowest, await balanceNano(r(), account.id, i % 3));
        await sleep(20);
      }
    })();

    const started = Date.now();
    const results = await Promise.all(
      Array.from({ length: 300 }, (_, n) => chat(r(), n % 3, account.key, body(n % 2 === 1))),
    );
    const elapsed = Date.now() - started;
    watching = false;
    await watcher;

    const successes = results.filter((x) => x.status === 200);
    const refused = results.filter((x) => x.status !== 200);
    const told = sumNano(successes.map((x) => x.costNano));
    const { balance, debits, entries } = await checkLedger(r(), account.id);
    console.info(
      `credits: unit cost ${unitNano} nano (${measured.usage.prompt_tokens}+${measured.usage.completion_tokens} tokens), start ${startNano} nano; ` +
        `${JSON.stringify(tally(results))} in ${elapsed} ms; successes per replica ${[0, 1, 2].map((i) => successes.filter((x) => x.replica === i).length).join('/')}; ` +
        `usage.cost of the answers (nano: count) ${JSON.stringify(histogram(successes.map((x) => x.costNano)))}; sum usage.cost ${told} nano, debits ${debits} nano ` +
        `(${entries.filter((e) => e.kind === 'debit').length} entries), end balance ${balance} nano, lowest seen ${lowest} nano`,
    );

    for (const x of successes) {
      expect(x.done).toBe(true);
      expect(x.costNano).toBe(costOfUsage(x.usage));
    }
    for (const x of refused) expect([x.status, x.code]).toEqual([402, 'insufficient_credits']);
    expect(lowest).toBeGreaterThanOrEqual(0);
    expect(told).toBe(debits);
    expect(balance).toBe(startNano - debits);
    expect(successes.length).toBeGreaterThanOrEqual(80);
    expect(successes.length).toBeLessThanOrEqual(120);
  });
});

needsPostgresAndRedis('a replica killed with SIGKILL mid-traffic (PostgreSQL + Redis)', { timeout: 90_000 }, () => {
  let replicas: Replicas | undefined;
  const r = () => replicas!;

  beforeAll(async () => {
    replicas = await startReplicas(3);
  });
  afterAll(async () => {
    await replicas?.stop();
  });

  it('leaves no phantom holds: the others keep answering and the whole remaining balance can be spent', async () => {
    showOutputsOnFailure(() => replicas);
    const victim = 2;
    const survivors = [0, 1];
    // Echo of a ~3,000-word prompt: each answer is ~3,000 chunks, so streams stay open for a while, and each
    // request costs a known, sizeable amount.
    const words = 'gate toll road coin lane wheel cart horse bridge river stone';
    const text = Array.from({ length: 3_000 }, (_, i) => words.split(' ')[i % 11]).join(' ');
    const followUp = { model: 'sandbox/echo', messages: [{ role: 'user', content: text }] };
    // The streams reserve for 8,000 completion tokens, far more than they use: a hold left behind is big.
    const streaming = { ...followUp, max_tokens: 8_000, stream: true, stream_options: { include_usage: true } };

    const probe = await createAccount(r(), { requests_per_minute: 100_000, tokens_per_minute: 100_000_000 });
    const measured = await chat(r(), 0, probe.key, followUp);
    expect(measured.status).toBe(200);
    const unitNano = measured.costNano!;
    expect(unitNano).toBe(costOfUsage(measured.usage));
    const promptTokens: number = measured.usage.prompt_tokens;
    // Prices of sandbox models: 0.00015 and 0.0006 USD per 1k tokens = 150 and 600 nano-USD per token.
    const holdNano = promptTokens * 150 + 8_000 * 600;

    const account = await createAccount(r(), { requests_per_minute: 100_000, tokens_per_minute: 100_000_000 });
    const streams = 60;
    await setBalance(r(), account.id, streams * holdNano + 10 * unitNano);
    await sleep(1_100);

    // Phase 1: 60 streams over the three replicas; SIGKILL the victim as soon as each of its streams has its
    // first chunk (so all of them hold money), or when one of them has finished.
    let victimStarted = 0;
    const victimStreams = Math.ceil(streams / 3);
    let triggerKill!: () => void;
    const killNow = new Promise<void>((resolve) => (triggerKill = resolve));
    const pending = Array.from({ length: streams }, (_, n) => {
      const replica = n % 3;
      const run = chat(r(), replica, account.key, streaming, {
        onFirstChunk: () => {
          if (replica === victim && ++victimStarted === victimStreams) triggerKill();
        },
      });
      if (replica === victim) void run.then(() => triggerKill());
      return run;
    });
    const timeout = setTimeout(() => triggerKill(), 15_000);
    await killNow;
    clearTimeout(timeout);
    const killedAt = Date.now();
    await r().kill(victim, 'SIGKILL');

    // The survivors keep answering, new requests included.
    const fresh = await Promise.all(survivors.map((i) => chat(r(), i, account.key, { ...followUp, max_tokens: 10 })));
    const results = await Promise.all(pending);
    const onVictim = results.filter((x) => x.replica === victim);
    const onSurvivors = results.filter((x) => x.replica !== victim);
    console.info(
      `kill: ${victimStarted}/${victimStreams} victim streams had started, ${onVictim.filter((x) => x.done).length} finished, ` +
        `${onVictim.filter((x) => x.failure || !x.done).length} cut (chunks received: ${onVictim.map((x) => x.chunks).join(',')}); ` +
        `survivors: ${JSON.stringify(tally(onSurvivors))}, fresh ${fresh.map((x) => x.status).join('/')}`,
    );
    for (const x of [...onSurvivors, ...fresh]) {
      expect(x.status).toBe(200);
      expect(x.done).toBe(true);
      expect(x.costNano).toBe(costOfUsage(x.usage));
    }
    expect(victimStarted).toBeGreaterThan(0);

    // The ledger invariant right after the kill; what is left is known from here on.
    const afterKill = await checkLedger(r(), account.id);
    const remaining = afterKill.balance;
    const phantomBound = onVictim.filter((x) => !x.done).length * holdNano;
    console.info(
      `after kill: balance ${remaining} nano = ${(remaining / unitNano).toFixed(2)} requests; victim holds possibly left: ${phantomBound} nano`,
    );

    const restartedAt = Date.now();
    await r().restart(victim);
    const restartMs = Date.now() - restartedAt;

    // Phase 2: spend the rest sequentially on the survivors. A 402 while the balance can still pay a whole
    // request means held money nobody owns: wait (up to 20 s after the restart) for it to be released.
    const deadline = Date.now() + 20_000;
    const spent: ChatResult[] = [];
    let blocked = 0;
    let unblockedAt: number | undefined;
    let lastBlockedAt: number | undefined;
    for (let n = 0; ; n++) {
      const result = await chat(r(), survivors[n % 2]!, account.key, followUp);
      if (result.status === 200) {
        spent.push(result);
        if (lastBlockedAt !== undefined && unblockedAt === undefined) unblockedAt = Date.now();
        continue;
      }
      expect([result.status, result.code]).toEqual([402, 'insufficient_credits']);
      const balance = await balanceNano(r(), account.id);
      if (balance < unitNano || Date.now() > deadline) break;
      blocked++;
      lastBlockedAt = Date.now();
      unblockedAt = undefined;
      await sleep(250);
    }
    const charged = sumNano(spent.map((x) => x.costNano));
    const end = await checkLedger(r(), account.id);
    console.info(
      `follow-up: ${spent.length} answers (${spent.filter((x) => x.costNano! < unitNano).length} partial), charged ${charged} nano of ${remaining}; ` +
        `end balance ${end.balance} nano; 402s while money was held: ${blocked}` +
        (blocked
          ? `, unblocked ${unblockedAt === undefined ? 'never' : `${unblockedAt - killedAt} ms after the kill`}`
          : '') +
        `; restart took ${restartMs} ms`,
    );

    for (const x of spent) expect(x.costNano).toBe(costOfUsage(x.usage));
    expect(charged).toBe(remaining - end.balance);
    expect(end.balance).toBeLessThan(unitNano);
    expect(remaining - charged).toBeLessThan(unitNano);

    // The restarted replica serves again, and no replica has a reservation open once everything has ended.
    const again = await chat(r(), victim, account.key, {
      model: 'sandbox/echo',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 1,
    });
    expect([200, 402]).toContain(again.status);
    for (let i = 0; i < 3; i++) {
      const metrics = await r().admin('GET', '/metrics', undefined, i);
      expect(metrics.status).toBe(200);
      expect(String(metrics.body)).toMatch(/^tollgate_reservations_open 0$/m);
    }
  });
});
