/**
 * `tollgate usage` and `tollgate generation`, run for real as child processes on the database of a gateway that
 * served real (sandbox) traffic, on SQLite and PostgreSQL: the export is the API's text, its sums are the ledger's,
 * and one request is explained with its model, cost and breakdown.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parseUsd, usdString } from '../../src/money/index.js';
import { apiCall } from '../support/admin-call.js';
import { describeEach } from '../support/backends.js';
import { cli, json, type Run } from '../support/cli.js';
import { startGateway, type TestGateway } from '../support/gateway.js';

const GROUPINGS = ['day', 'model', 'key', 'endpoint'];
const DAY_MS = 86_400_000;
const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** The CSV's records as objects by its header (the values here hold no commas or quotes). */
function csvRecords(text: string): Array<Record<string, string>> {
  expect(text).not.toContain('"');
  const [header, ...lines] = text.split('\r\n').filter(Boolean);
  const columns = header!.split(',');
  return lines.map((line) => Object.fromEntries(line.split(',').map((value, i) => [columns[i]!, value])));
}

/** nano-USD as the CLI writes money: "$0.0000018", "$4.50". */
function usd(nano: string | bigint): string {
  const [whole, fraction = ''] = usdString(BigInt(nano)).split('.');
  return `$${whole}.${fraction.padEnd(2, '0')}`;
}

const sumNano = (records: Array<Record<string, string>>) => records.reduce((sum, r) => sum + BigInt(r.cost_nano!), 0n);

describeEach(['sqlite', 'postgres'] as const)('tollgate usage and generation on %s', (dialect) => {
  let gw: TestGateway;
  let owner: { id: string; key: string };
  let env: Record<string, string>;
  /** The range the tests export: yesterday to tomorrow, so that a run across midnight UTC still sees every request. */
  const range = { from: day(Date.now() - DAY_MS), to: day(Date.now() + DAY_MS) };
  const query = `from=${range.from}&to=${range.to}`;
  const run = (args: string[]): Promise<Run> => cli(gw.database.dataDir, args, env);
  const api = (path: string, key = owner.key) => apiCall(gw.url, key, 'GET', path);
  const send = async (key: string, path: string, body: object, requestId?: string) => {
    const response = await fetch(`${gw.url}${path}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        ...(requestId ? { 'x-request-id': requestId } : {}),
      },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    expect(response.status, text).toBe(200);
    return { requestId: response.headers.get('x-request-id')!, body: text.startsWith('{') ? JSON.parse(text) : text };
  };
  let chat: { requestId: string; body: any };
  let reused: string;

  beforeAll(async () => {
    gw = await startGateway({ dialect });
    env = gw.database.databaseUrl ? { DATABASE_URL: gw.database.databaseUrl } : {};
    owner = await gw.account();
    const ci = await gw.key(owner.id, { name: 'ci' });
    const project = await gw.key(owner.id, { name: 'project', permissions: 'project' });
    const test = await gw.key(owner.id, { name: 'test', environment: 'test' });
    const messages = [{ role: 'user', content: 'what did this cost?' }];
    chat = await send(owner.key, '/v1/chat/completions', { model: 'sandbox/echo', messages });
    await send(project.key, '/v1/chat/completions', {
      model: 'sandbox/lorem',
      stream: true,
      stream_options: { include_usage: true },
      max_tokens: 16,
      messages,
    });
    await send(ci.key, '/v1/embeddings', { model: 'sandbox/embed', input: ['one', 'two'] });
    await send(owner.key, '/v1/messages', { model: 'sandbox/echo', max_tokens: 32, messages });
    await send(owner.key, '/v1/responses', { model: 'sandbox/lorem', input: 'hi', max_output_tokens: 20 });
    // A reused x-request-id: the newest request is the one explained.
    reused = `report-${dialect}`;
    await send(ci.key, '/v1/chat/completions', { model: 'sandbox/echo', messages }, reused);
    await send(ci.key, '/v1/chat/completions', { model: 'sandbox/lorem', max_tokens: 7, messages }, reused);
    // A test key's request is not charged: it is in no export.
    await send(test.key, '/v1/chat/completions', { model: 'sandbox/echo', messages });
  });
  afterAll(() => gw?.close());

  it('usage --format csv prints the text of GET /v1/usage?format=csv, for every grouping, summing to the ledger debits', async () => {
    const ledger = await gw.admin('GET', `/admin/accounts/${owner.id}/ledger?limit=500`);
    const debits = ledger.body.data.filter((e: any) => e.kind === 'debit');
    expect(debits).toHaveLength(7);
    const debitedNano = debits.reduce((sum: bigint, e: any) => sum - parseUsd(e.amount), 0n);
    const account = await gw.admin('GET', `/admin/accounts/${owner.id}`);
    expect(parseUsd(5) - parseUsd(account.body.balance.credits)).toBe(debitedNano);

    for (const by of ['', ...GROUPINGS]) {
      const fromApi = await api(`/v1/usage?${query}&format=csv${by ? `&group_by=${by}` : ''}`);
      expect(fromApi.status).toBe(200);
      const printed = await run([
        'usage',
        '--account',
        owner.id,
        '--from',
        range.from,
        '--to',
        range.to,
        '--format',
        'csv',
        ...(by ? ['--group-by', by] : []),
      ]);
      expect([printed.code, printed.stderr]).toEqual([0, '']);
      expect(printed.stdout, by || 'per request').toBe(fromApi.text);
      const records = csvRecords(printed.stdout);
      expect(records.length).toBeGreaterThan(0);
      expect(sumNano(records), by || 'per request').toBe(debitedNano);
      // `cost` is the same amount in exact decimal USD.
      expect(records.reduce((sum, r) => sum + parseUsd(r.cost!), 0n)).toBe(debitedNano);
      if (!by) {
        expect(records.map((r) => r.ledger_entry_id).sort()).toEqual(debits.map((e: any) => e.id).sort());
        expect(records.map((r) => r.endpoint)).toContain('/v1/messages');
      }
    }
  }, 120_000);

  it('usage --json prints the text of GET /v1/usage; the default is a table with the total', async () => {
    const fromApi = await api(`/v1/usage?${query}&group_by=model`);
    const printed = await run(['usage', '--account', owner.id, '--from', range.from, '--to', range.to]);
    const asJson = await run([
      'usage',
      '--account',
      owner.id,
      '--from',
      range.from,
      '--to',
      range.to,
      '--group-by',
      'model',
      '--json',
    ]);
    expect([asJson.code, asJson.stderr]).toEqual([0, '']);
    expect(asJson.stdout).toBe(fromApi.text);

    expect([printed.code, printed.stderr]).toEqual([0, '']);
    const total = fromApi.body.total;
    expect(printed.stdout).toContain(`Usage of ${owner.id} from ${range.from} to ${range.to} (UTC days), per request:`);
    const rows = printed.stdout.split('\n').filter((line) => line.includes('/v1/'));
    expect(rows).toHaveLength(7);
    expect(rows.find((line) => line.includes(chat.requestId))).toMatch(
      /sandbox\/echo\s+default\s+\/v1\/chat\/completions\s+\d+\+\d+\s+\$0\.\d+$/,
    );
    expect(printed.stdout).toContain(
      `Total: ${total.requests} requests, ${total.prompt_tokens} prompt + ${total.completion_tokens} completion tokens, ${usd(total.cost_nano)}\n`,
    );
  }, 60_000);

  it("generation prints the request's model, cost and breakdown; --json is GET /v1/generation's answer", async () => {
    const fromApi = await api(`/v1/generation?id=${chat.body.id}`);
    expect(fromApi.status).toBe(200);
    const g = fromApi.body;

    const printed = await run(['generation', chat.body.id, '--account', owner.id]);
    expect([printed.code, printed.stderr]).toEqual([0, '']);
    const cost = usd(g.cost_nano);
    for (const text of [
      `Request:       ${chat.requestId}`,
      `Answer id:     ${chat.body.id}`,
      'Model:         sandbox/echo',
      'Provider:      sandbox',
      'Endpoint:      /v1/chat/completions',
      `Key:           default (${g.key.id})`,
      'Outcome:       stop, not streamed',
      `Tokens:        ${g.tokens.prompt} prompt + ${g.tokens.completion} completion = ${g.tokens.total}`,
      `Cost:          ${cost}`,
      `Ledger entry:  ${g.ledger_entry.id}`,
    ])
      expect(printed.stdout).toContain(text);
    const lines = printed.stdout.split('\n');
    expect(lines.find((line) => line.startsWith('input '))).toMatch(
      new RegExp(
        `^input\\s+${g.tokens.input} tokens\\s+\\$0\\.15 per 1M tokens\\s+\\$${g.breakdown.lines[0].cost.replace('.', '\\.')}$`,
      ),
    );
    expect(lines.find((line) => line.startsWith('output '))).toMatch(
      /^output\s+\d+ tokens?\s+\$0\.60 per 1M tokens\s+\$/,
    );
    expect(printed.stdout).toContain(`Priced ${cost}; charged ${cost}.`);

    // By the ledger entry id, in JSON: the API's answer.
    expect(await json(gw.database.dataDir, ['generation', g.ledger_entry.id, '--account', owner.id], env)).toEqual(g);
    // A reused x-request-id: the newest request.
    const newest = await json(gw.database.dataDir, ['generation', reused, '--account', owner.id], env);
    expect(newest).toEqual((await api(`/v1/generation?id=${reused}`)).body);
    expect(newest).toMatchObject({ id: reused, model: 'sandbox/lorem', finish_reason: 'length' });
  }, 60_000);

  it('an id not charged to the account, an unknown account or a bad option exits 1 saying so', async () => {
    const other = await gw.account();
    const unknown = await run(['generation', 'chatcmpl-nope', '--account', owner.id]);
    expect([unknown.code, unknown.stdout]).toEqual([1, '']);
    expect(unknown.stderr).toBe(
      `tollgate: No request 'chatcmpl-nope' was charged to ${owner.id}: give the answer's id, its x-request-id or its ledger entry id (param: id)\n`,
    );
    const elsewhere = await run(['generation', chat.body.id, '--account', other.id]);
    expect([elsewhere.code, elsewhere.stdout]).toEqual([1, '']);
    expect(elsewhere.stderr).toContain(`No request '${chat.body.id}' was charged to ${other.id}`);
    const noAccount = await run(['usage', '--account', 'acct_nope']);
    expect(noAccount.code).toBe(1);
    expect(noAccount.stderr).toMatch(/^tollgate: .*acct_nope/);
    const badDay = await run(['usage', '--account', owner.id, '--from', '2026-02-30']);
    expect([badDay.code, badDay.stderr]).toEqual([1, "tollgate: 'from' must be a UTC day, YYYY-MM-DD (param: from)\n"]);
    const badGrouping = await run(['usage', '--account', owner.id, '--group-by', 'week']);
    expect(badGrouping.code).toBe(1);
    expect(badGrouping.stderr).toContain("argument 'week' is invalid. Allowed choices are day, model, key, endpoint");
  }, 60_000);
});
