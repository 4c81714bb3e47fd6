/**
 * Every charge explained, through the dashboard's API: the usage export behind "Download CSV" and one request's
 * detail, for the signed-in account only, checked against the ledger as storage holds it.
 */
import { afterAll, beforeAll, expect, test } from 'vitest';
import type { LedgerRecord } from '../../src/storage/index.js';
import { describeEach } from '../support/backends.js';
import { DIALECTS } from '../support/databases.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { DashboardClient, uniqueEmail } from './client.js';
import { parseCsv } from './csv.js';

describeEach(DIALECTS)('dashboard charges on %s', (dialect) => {
  let gateway: TestGateway;
  let user: DashboardClient;
  let accountId: string;
  let debits: LedgerRecord[];
  let answerIds: string[];
  const today = new Date().toISOString().slice(0, 10);

  beforeAll(async () => {
    gateway = await startGateway({ dialect });
    user = new DashboardClient(gateway.url);
    const { body } = await user.signUp(uniqueEmail('charges'));
    accountId = body.account_id;
    const second = (await user.request('POST', '/keys', { name: 'second, "quoted"' })).body.key as string;
    const first = gateway.client(body.first_key.key);
    const answers = [
      await first.chat.completions.create({ model: 'sandbox/echo', messages: [{ role: 'user', content: 'one' }] }),
      await gateway.client(second).chat.completions.create({
        model: 'sandbox/echo',
        messages: [{ role: 'user', content: 'two, a little longer' }],
      }),
    ];
    // A streamed one too: its id is in every chunk.
    const stream = await first.chat.completions.create({
      model: 'sandbox/echo',
      messages: [{ role: 'user', content: 'three' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let streamedId = '';
    for await (const chunk of stream) streamedId = chunk.id;
    answerIds = [...answers.map((a) => a.id), streamedId];
    debits = (await gateway.app.storage.ledger.list(accountId, { limit: 100 })).filter((e) => e.kind === 'debit');
  });
  afterAll(() => gateway?.close());

  const json = (response: Response): Promise<any> => response.json();

  /** The export as the browser downloads it: the session cookie, no JSON parsing. */
  async function download(query: string) {
    const cookie = [...user.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    return fetch(`${gateway.url}/dashboard/api/usage/export?${query}`, { headers: { cookie } });
  }

  test("CSV: one row per request, every cost_nano the ledger's debit, the ids to find each request by", async () => {
    expect(debits).toHaveLength(3);
    const response = await download(`from=${today}&to=${today}&format=csv`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(response.headers.get('content-disposition')).toBe(`attachment; filename="usage-${today}-${today}.csv"`);
    const rows = parseCsv(await response.text());
    expect(rows).toHaveLength(3);
    const byRequest = new Map(debits.map((d) => [d.requestId, d]));
    for (const row of rows) {
      const debit = byRequest.get(row.request_id!)!;
      expect(debit).toBeDefined();
      expect(row).toMatchObject({
        ledger_entry_id: debit.id,
        cost_nano: String(-debit.amountNano),
        model: 'sandbox/echo',
        endpoint: '/v1/chat/completions',
      });
    }
    expect(rows.map((r) => r.answer_id).sort()).toEqual([...answerIds].sort());
    expect(rows.map((r) => r.key_name)).toContain('second, "quoted"');
    const total = rows.reduce((sum, r) => sum + BigInt(r.cost_nano!), 0n);
    expect(total).toBe(debits.reduce((sum, d) => sum - d.amountNano, 0n));
  });

  test('JSON and grouped exports sum to the same debits; the default range is this month', async () => {
    const total = String(debits.reduce((sum, d) => sum - d.amountNano, 0n));
    const whole = await json(await download(''));
    expect(whole).toMatchObject({ object: 'usage', from: `${today.slice(0, 7)}-01`, to: today, group_by: null });
    expect(whole.data).toHaveLength(3);
    expect(whole.total).toMatchObject({ requests: 3, cost_nano: total });
    const byModel = await download(`from=${today}&to=${today}&group_by=model&format=json`);
    expect(byModel.headers.get('content-disposition')).toBe(
      `attachment; filename="usage-${today}-${today}-model.json"`,
    );
    expect((await json(byModel)).data).toEqual([
      expect.objectContaining({ model: 'sandbox/echo', requests: 3, cost_nano: total }),
    ]);
    const byKey = parseCsv(await (await download(`group_by=key&format=csv`)).text());
    expect(byKey.map((r) => Number(r.requests)).sort()).toEqual([1, 2]);
  });

  test("detail: the request by its request id, answer id or ledger entry, with the ledger's amount", async () => {
    for (const debit of debits) {
      const { status, body } = await user.request('GET', `/generation?id=${encodeURIComponent(debit.requestId!)}`);
      expect(status).toBe(200);
      expect(body).toMatchObject({
        object: 'generation',
        id: debit.requestId,
        answer_id: debit.answerId,
        model: 'sandbox/echo',
        provider: 'sandbox',
        endpoint: '/v1/chat/completions',
        cost_nano: String(-debit.amountNano),
        ledger_entry: { id: debit.id },
      });
      expect(body.breakdown.charged_nano).toBe(String(-debit.amountNano));
      expect(body.breakdown.lines.map((l: { kind: string }) => l.kind)).toEqual(
        expect.arrayContaining(['input', 'output']),
      );
      for (const other of [debit.answerId!, debit.id])
        expect((await user.request('GET', `/generation?id=${encodeURIComponent(other)}`)).body).toEqual(body);
    }
    const streamed = debits.find((d) => d.answerId === answerIds[2])!;
    const detail = (await user.request('GET', `/generation?id=${streamed.id}`)).body;
    expect([detail.streamed, detail.key.name]).toEqual([true, expect.any(String)]);
  });

  test("the keys list tells each key's requests and credits today and this month, as its ledger debits sum", async () => {
    const { status, body } = await user.request('GET', '/keys');
    expect(status).toBe(200);
    const keys = body.data as Array<{
      id: string;
      activity: Record<'daily' | 'monthly', { requests: number; credits_used: number }>;
    }>;
    expect(keys).toHaveLength(2);
    for (const key of keys) {
      const own = debits.filter((d) => d.keyId === key.id);
      expect(own.length).toBeGreaterThan(0);
      for (const period of ['daily', 'monthly'] as const) {
        expect(key.activity[period].requests).toBe(own.length);
        expect(BigInt(Math.round(key.activity[period].credits_used * 1e9))).toBe(
          own.reduce((s, d) => s - d.amountNano, 0n),
        );
      }
    }
  });

  test("another account's request, or none, is a 404; its export has none of them", async () => {
    const other = new DashboardClient(gateway.url);
    await other.signUp(uniqueEmail('charges-other'));
    for (const id of [debits[0]!.requestId!, debits[0]!.answerId!, debits[0]!.id, 'req_nothing']) {
      const { status, body } = await other.request('GET', `/generation?id=${encodeURIComponent(id)}`);
      expect([status, body.error.code, body.error.param]).toEqual([404, 'not_found', 'id']);
    }
    const cookie = [...other.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const csv = await fetch(`${gateway.url}/dashboard/api/usage/export?format=csv`, { headers: { cookie } });
    expect(parseCsv(await csv.text())).toEqual([]);
  });

  test('a bad range, grouping or id is the 400 that names it; signed out is a 401', async () => {
    for (const [query, param] of [
      [`from=${today}&to=2020-01-01`, 'from'],
      ['from=yesterday', 'from'],
      ['to=2026-02-30', 'to'],
      ['from=2026-01-01&from=2026-01-02', 'from'],
      ['group_by=week', 'group_by'],
      ['format=xlsx', 'format'],
    ]) {
      const response = await download(query!);
      const body = await json(response);
      expect([query, response.status, body.error.type, body.error.param]).toEqual([
        query,
        400,
        'invalid_request_error',
        param,
      ]);
    }
    const missing = await user.request('GET', '/generation');
    expect([missing.status, missing.body.error.param]).toEqual([400, 'id']);
    const anonymous = new DashboardClient(gateway.url);
    for (const path of ['/usage/export?format=csv', `/generation?id=${debits[0]!.id}`]) {
      const { status, body } = await anonymous.request('GET', path);
      expect([path, status, body.error.code]).toEqual([path, 401, 'not_signed_in']);
    }
  });
});
