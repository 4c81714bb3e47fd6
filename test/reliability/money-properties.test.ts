/**
 * Property: random interleavings of reserve / settle / release / top-up / correction / crash / lost commit
 * acknowledgements, run against the real Wallet, credit state and Committer over a real database, never make
 * a balance negative, never break "balance = sum of ledger" (nor the running balance of each row), and never
 * charge one request twice; what a settle told its caller is exactly what the ledger holds.
 */
import { countedUsage, PriceRules } from '../../src/pricing/index.js';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Price } from '../../src/billing/index.js';
import { GatewayError } from '../../src/errors/index.js';
import { openWorld, type KeyKind, type Open, type World } from './money-harness.js';
import { describeEach } from '../support/backends.js';

/** 0.01 USD per 1K prompt tokens, 0.03 USD per 1K completion tokens. */
const PRICE: Price = { promptPer1k: 10_000_000n, completionPer1k: 30_000_000n };
const SHEET = new PriceRules({ prompt: 0.01, completion: 0.03 }).at(0);
const PROJECT_LIMIT_NANO = 400_000_000n;
/** The `free` plan's daily limit (5 USD). */
const FREE_DAILY_LIMIT_NANO = 5_000_000_000n;
const REFUSALS = new Set(['insufficient_credits', 'daily_limit_exceeded', 'key_limit_exceeded']);

const acct = fc.integer({ min: 0, max: 2 });
const op = fc.oneof(
  {
    weight: 9,
    arbitrary: fc.record({
      t: fc.constant('reserve' as const),
      acct,
      key: fc.constantFrom<KeyKind>('live', 'live', 'test', 'project'),
      prompt: fc.integer({ min: 1, max: 3000 }),
      max: fc.option(fc.integer({ min: 1, max: 4096 }), { nil: undefined }),
    }),
  },
  {
    weight: 8,
    arbitrary: fc.record({
      t: fc.constant('settle' as const),
      pick: fc.nat(),
      use: fc.oneof(fc.integer({ min: 0, max: 100 }), fc.integer({ min: 101, max: 150 })),
    }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('release' as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('double' as const), pick: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({ t: fc.constant('topup' as const), acct, cents: fc.integer({ min: 1, max: 500 }) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ t: fc.constant('correction' as const), acct, cents: fc.integer({ min: 1, max: 800 }) }),
  },
  { weight: 3, arbitrary: fc.record({ t: fc.constant('tick' as const) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('crash' as const) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('loseAck' as const) }) },
);
type Op = typeof op extends fc.Arbitrary<infer T> ? T : never;

const tick = () => new Promise((resolve) => setImmediate(resolve));

interface RunFacts {
  accounts: Array<{ id: string; keys: Record<KeyKind, { id: string }> }>;
  /** What each resolved settle told its caller. */
  told: Map<string, bigint>;
  released: Set<string>;
  testRequests: Set<string>;
}

let runs = 0;
/** Totals over all runs, printed at the end so a run shows how much it exercised. */
const stats = { reserved: 0, refused: 0, settled: 0, charged: 0, released: 0, crashes: 0, lostAcks: 0 };

async function play(world: World, ops: Op[]): Promise<RunFacts> {
  const accounts = await world.accounts(3);
  const facts: RunFacts = { accounts, told: new Map(), released: new Set(), testRequests: new Set() };
  const open: Open[] = [];
  const done: Open[] = [];
  const settling: Array<{ proc: Open['proc']; promise: Promise<unknown> }> = [];
  const run = ++runs;
  let n = 0;
  const take = (list: Open[], pick: number) => (list.length ? list.splice(pick % list.length, 1)[0] : undefined);

  for (const step of ops) {
    const proc = world.proc;
    switch (step.t) {
      case 'reserve': {
        const { id, keys } = accounts[step.acct]!;
        const key = keys[step.key];
        const requestId = `req_p${run}_${++n}`;
        const account = (await proc.wallet.accounts.get(id))!;
        try {
          const reservation = await proc.wallet.reserve({
            requestId,
            account,
            key,
            at: Date.now(),
            price: PRICE,
            feesNano: 0n,
            promptTokens: step.prompt,
            promptCeiling: step.prompt,
            requestedMaxTokens: step.max,
            choices: 1,
            modelMaxTokens: 4096,
            contextLength: 16384,
          });
          if (key.environment === 'test') facts.testRequests.add(requestId);
          stats.reserved++;
          open.push({ reservation, proc, requestId, maxTokens: reservation.maxTokens, promptTokens: step.prompt });
        } catch (error) {
          if (!(error instanceof GatewayError) || !REFUSALS.has(error.code)) throw error;
          stats.refused++;
        }
        break;
      }
      case 'settle': {
        const o = take(open, step.pick);
        if (!o) break;
        // Over 100 %: the upstream reports more than the request allowed (completion, capped at settlement) and
        // more prompt than tollgate estimated (an estimate that was too low).
        const completionTokens = Math.floor((o.maxTokens * step.use) / 100);
        const promptTokens = step.use > 100 ? Math.floor((o.promptTokens * step.use) / 100) : o.promptTokens;
        const promise = o.reservation
          .settle({
            requestId: o.requestId,
            model: 'm',
            sheet: SHEET,
            usage: countedUsage(promptTokens, completionTokens),
          })
          .then((s) => {
            facts.told.set(o.requestId, s.chargedNano);
            stats.settled++;
            if (s.chargedNano > 0n) stats.charged++;
          })
          .catch(() => undefined); // a crashed process never hears back; the ledger tells what happened
        settling.push({ proc: o.proc, promise });
        done.push(o);
        break;
      }
      case 'release': {
        const o = take(open, step.pick);
        if (!o) break;
        o.reservation.release();
        facts.released.add(o.requestId);
        stats.released++;
        done.push(o);
        break;
      }
      case 'double': {
        const o = done.length ? done[step.pick % done.length]! : undefined;
        if (!o) break;
        expect(() =>
          o.reservation.settle({ requestId: o.requestId, model: 'm', sheet: SHEET, usage: countedUsage(1, 1) }),
        ).toThrow(/settled twice/);
        o.reservation.release(); // a no-op after settle or release
        break;
      }
      case 'topup':
        await world.admin.addCredits(accounts[step.acct]!.id, (step.cents / 100).toFixed(2));
        break;
      case 'correction':
        await world.admin.addCredits(accounts[step.acct]!.id, `-${(step.cents / 100).toFixed(2)}`);
        break;
      case 'tick':
        await tick();
        break;
      case 'crash':
        world.crash();
        stats.crashes++;
        open.length = 0; // requests in flight die with their process, unsettled
        break;
      case 'loseAck':
        proc.loseAcks++;
        stats.lostAcks++;
        break;
    }
  }
  for (const o of open.splice(0)) {
    o.reservation.release();
    facts.released.add(o.requestId);
  }
  await Promise.all(settling.filter((s) => !s.proc.dead).map((s) => s.promise));
  // A clean stop of the live process (drains its committer and recharges), then a fresh one for the next run.
  const last = world.proc;
  await last.wallet.stop();
  last.dead = true;
  world.spawn();
  await world.quiesce();
  return facts;
}

async function check(world: World, facts: RunFacts): Promise<void> {
  const { storage } = world;
  for (const { id, keys } of facts.accounts) {
    const account = (await storage.accounts.get(id))!;
    expect(account.balanceNano).toBeGreaterThanOrEqual(0n);
    expect(await storage.ledger.sum(id)).toBe(account.balanceNano);
    const rows = (await storage.ledger.list(id, { limit: 10_000 })).reverse();
    let running = 0n;
    const debits = new Map<string, bigint>();
    const byKey = new Map<string, bigint>();
    const spentByDay = new Map<string, bigint>();
    for (const row of rows) {
      running += row.amountNano;
      expect(row.balanceAfterNano).toBe(running);
      expect(row.balanceAfterNano).toBeGreaterThanOrEqual(0n);
      if (row.kind !== 'debit') continue;
      expect(debits.has(row.requestId!), `request ${row.requestId} charged twice`).toBe(false);
      debits.set(row.requestId!, -row.amountNano);
      byKey.set(row.keyId!, (byKey.get(row.keyId!) ?? 0n) - row.amountNano);
      const day = new Date(row.createdAt).toISOString().slice(0, 10);
      spentByDay.set(day, (spentByDay.get(day) ?? 0n) - row.amountNano);
    }
    expect(running).toBe(account.balanceNano);
    for (const [requestId, amount] of debits) {
      expect(facts.testRequests.has(requestId), 'a test key moved money').toBe(false);
      expect(facts.released.has(requestId), 'a released hold was charged').toBe(false);
      if (facts.told.has(requestId)) expect(amount).toBe(facts.told.get(requestId));
    }
    for (const kind of ['live', 'test', 'project'] as const) {
      const key = (await storage.keys.get(keys[kind].id))!;
      expect(key.spentNano).toBe(byKey.get(key.id) ?? 0n);
    }
    // A limit holds even when actual costs exceed the estimates.
    expect(byKey.get(keys.project.id) ?? 0n).toBeLessThanOrEqual(PROJECT_LIMIT_NANO);
    if (account.plan === 'free') {
      for (const [day, spent] of spentByDay)
        expect(spent, `daily limit passed on ${day}`).toBeLessThanOrEqual(FREE_DAILY_LIMIT_NANO);
    }
  }
  // Every caller that heard "charged X" finds exactly X in the ledger.
  for (const [requestId, charged] of facts.told) expect(await storage.ledger.debitedFor(requestId)).toBe(charged);
}

describeEach([
  ['sqlite', Number(process.env.MONEY_RUNS ?? 80)],
  ['postgres', Math.ceil(Number(process.env.MONEY_RUNS ?? 80) / 3)],
] as const)('money on %s: ledger and reservations under random interleavings', (dialect, numRuns) => {
  let world: World;
  beforeAll(async () => {
    world = await openWorld(dialect);
  });
  afterAll(async () => {
    await world?.close();
  });

  it('keeps every balance >= 0 and equal to its ledger, and charges each request at most once', async () => {
    const started = performance.now();
    let operations = 0;
    Object.keys(stats).forEach((k) => (stats[k as keyof typeof stats] = 0));
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 20, maxLength: 120 }), async (ops) => {
        operations += ops.length;
        const facts = await play(world, ops);
        await check(world, facts);
      }),
      { numRuns, seed: Number(process.env.MONEY_SEED ?? 20_261_122), endOnFailure: true },
    );
    console.info(
      `money ${dialect}: ${numRuns} runs, ${operations} operations, ${Math.round(performance.now() - started)} ms`,
      stats,
    );
  }, 120_000);
});
