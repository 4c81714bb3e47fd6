/**
 * Over random traffic across accounts, keys, models, endpoints and days, written through the real money writers:
 * every usage export (one row per request, read 3 at a time, and each grouping; JSON and CSV) over a random range of days sums to
 * the ledger's debits of that range to the nano-USD, group by group, and every request looked up by its id gives
 * its own ledger row's cost, never another account's. On SQLite and on PostgreSQL.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { parseUsageQuery, usageExport } from '../../src/reports/index.js';
import { openStorage, type ChargeGrouping, type Storage } from '../../src/storage/index.js';
import { describeEach } from '../support/backends.js';
import { createTestDatabase, DIALECTS, type TestDatabase } from '../support/databases.js';

const DAY_MS = 86_400_000;
const START = Date.parse('2026-08-01T00:00:00Z');
const SPAN_DAYS = 70;
const MODELS = ['openai/gpt-x', 'anthropic/claude-y', 'sandbox/echo'];
const ENDPOINTS = ['/v1/chat/completions', '/v1/completions', '/v1/embeddings', '/v1/responses', '/v1/messages'];
const GROUPINGS: Array<ChargeGrouping | undefined> = [undefined, 'day', 'model', 'key', 'endpoint'];

interface Charge {
  account: number;
  key: number;
  model: number;
  endpoint: number;
  atMs: number;
  nano: bigint;
  prompt: number;
  completion: number;
}

const chargeArb = fc.record({
  account: fc.integer({ min: 0, max: 1 }),
  key: fc.integer({ min: 0, max: 3 }),
  model: fc.integer({ min: 0, max: MODELS.length - 1 }),
  endpoint: fc.integer({ min: 0, max: ENDPOINTS.length - 1 }),
  // Whole hours: requests of the same millisecond are common, and pages must not split or repeat them.
  atMs: fc.integer({ min: 0, max: SPAN_DAYS * 24 - 1 }).map((hour) => hour * 3_600_000),
  nano: fc.bigInt({ min: 1n, max: 5_000_000_000n }),
  prompt: fc.integer({ min: 0, max: 200_000 }),
  completion: fc.integer({ min: 0, max: 50_000 }),
});
const dayArb = fc.integer({ min: 0, max: SPAN_DAYS - 1 });

describeEach(DIALECTS.map((d) => [d]))('usage exports on %s', (dialect) => {
  let database: TestDatabase;
  let storage: Storage;
  let run = 0;
  /** Each run's traffic is in days of its own (ledger ids are made from the time, so times must not repeat). */
  const base = () => START + run * (SPAN_DAYS + 1) * DAY_MS;
  const dayOf = (offset: number) => new Date(base() + offset * DAY_MS).toISOString().slice(0, 10);

  beforeAll(async () => {
    database = await createTestDatabase(dialect);
    storage = await openStorage({ dataDir: database.dataDir, databaseUrl: database.databaseUrl });
  });
  afterAll(async () => {
    vi.useRealTimers();
    await storage?.close();
    await database?.drop();
  });

  /** Writes the charges as the gateway does, each at its own time, between top-ups that are not usage. */
  async function write(charges: Charge[], accounts: string[]): Promise<Map<Charge, string>> {
    vi.useFakeTimers({ toFake: ['Date'] });
    const ids = new Map<Charge, string>();
    try {
      for (const id of accounts) {
        vi.setSystemTime(base() - DAY_MS);
        await storage.ledger.createAccount({
          id,
          email: `${id}@example.com`,
          plan: 'free',
          settings: '{}',
          grantNano: 0n,
        });
        await storage.ledger.commit({ entries: [{ accountId: id, kind: 'topup', amountNano: 10n ** 15n }] });
      }
      // In time order, as a gateway writes them.
      for (const [i, c] of [...charges].sort((x, y) => x.atMs - y.atMs).entries()) {
        vi.setSystemTime(base() + c.atMs);
        const accountId = accounts[c.account]!;
        const requestId = `req_${accountId}_${i}`;
        ids.set(c, requestId);
        await storage.ledger.commit({
          entries: [
            {
              accountId,
              kind: 'debit',
              amountNano: -c.nano,
              requestId,
              answerId: `chatcmpl-${requestId}`,
              keyId: `key_${accountId}_${c.key}`,
              model: MODELS[c.model]!,
              endpoint: ENDPOINTS[c.endpoint]!,
              promptTokens: c.prompt,
              completionTokens: c.completion,
              usage: {
                day: dayOf(Math.floor(c.atMs / DAY_MS)),
                environment: 'live',
                model: MODELS[c.model]!,
                keyId: `key_${accountId}_${c.key}`,
              },
            },
          ],
        });
        if (i % 7 === 3) await storage.ledger.commit({ entries: [{ accountId, kind: 'topup', amountNano: 1n }] });
      }
    } finally {
      vi.useRealTimers();
    }
    return ids;
  }

  /** The export as text, read to its end, parsed back into rows. */
  async function exported(accountId: string, raw: Record<string, string>) {
    const query = parseUsageQuery(raw);
    const range = { accountId, fromMs: query.fromMs, toMs: query.toMs };
    let text = '';
    for await (const piece of usageExport({ charges: storage.charges, keyNames: new Map(), pageSize: 3 }, range, query))
      text += piece;
    if (query.format === 'json') return (JSON.parse(text) as { data: Array<Record<string, unknown>> }).data;
    const [header, ...lines] = text.split('\r\n').filter((l) => l !== '');
    const columns = header!.split(',');
    return lines.map((line) => Object.fromEntries(line.split(',').map((v, i) => [columns[i], v])));
  }

  const groupOf = (c: Charge, accountId: string, by: ChargeGrouping | undefined, ids: Map<Charge, string>) =>
    by === 'day'
      ? dayOf(Math.floor(c.atMs / DAY_MS))
      : by === 'model'
        ? MODELS[c.model]
        : by === 'key'
          ? `key_${accountId}_${c.key}`
          : by === 'endpoint'
            ? ENDPOINTS[c.endpoint]
            : ids.get(c);

  it('sums to the ledger to the nano-USD, in every grouping and format, over any range of days', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(chargeArb, { minLength: 1, maxLength: 40 }), dayArb, dayArb, async (charges, a, b) => {
        run++;
        const accounts = [`acct_p${run}a`, `acct_p${run}b`];
        const ids = await write(charges, accounts);
        const [fromDay, toDay] = a <= b ? [a, b] : [b, a];
        const inRange = (c: Charge) => c.atMs >= fromDay * DAY_MS && c.atMs < (toDay + 1) * DAY_MS;

        for (const [index, accountId] of accounts.entries()) {
          const mine = charges.filter((c) => c.account === index && inRange(c));
          for (const by of GROUPINGS) {
            const expected = new Map<string, { nano: bigint; requests: number; prompt: number; completion: number }>();
            for (const c of mine) {
              const group = groupOf(c, accountId, by, ids)!;
              const sum = expected.get(group) ?? { nano: 0n, requests: 0, prompt: 0, completion: 0 };
              expected.set(group, {
                nano: sum.nano + c.nano,
                requests: sum.requests + 1,
                prompt: sum.prompt + c.prompt,
                completion: sum.completion + c.completion,
              });
            }
            for (const format of ['json', 'csv']) {
              const rows = await exported(accountId, {
                from: dayOf(fromDay),
                to: dayOf(toDay),
                format,
                ...(by ? { group_by: by } : {}),
              });
              const column = by === undefined ? 'request_id' : by === 'key' ? 'key_id' : by;
              const got = new Map(
                rows.map((r) => [
                  String(r[column]),
                  {
                    nano: BigInt(r.cost_nano as string),
                    requests: by === undefined ? 1 : Number(r.requests),
                    prompt: Number(r.prompt_tokens),
                    completion: Number(r.completion_tokens),
                  },
                ]),
              );
              expect(rows, `${accountId} ${by ?? 'requests'} ${format}: no row twice`).toHaveLength(expected.size);
              expect(got, `${accountId} ${by ?? 'requests'} ${format}`).toEqual(expected);
            }
          }
        }

        // Each request's lookup gives its own row; the other account's ids are unknown.
        for (const c of charges.slice(0, 5)) {
          const requestId = ids.get(c)!;
          const owner = accounts[c.account]!;
          const found = await storage.charges.find(owner, `chatcmpl-${requestId}`);
          expect(found?.amountNano).toBe(-c.nano);
          expect((await storage.charges.find(owner, requestId))?.id).toBe(found?.id);
          expect(await storage.charges.find(accounts[1 - c.account]!, requestId)).toBeUndefined();
        }
      }),
      { numRuns: 12 },
    );
  });
});
