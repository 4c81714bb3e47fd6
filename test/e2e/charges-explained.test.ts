/**
 * Every charge explained, against the running gateway with the official SDKs: each endpoint's request is found by
 * its answer's id and by its x-request-id, and `GET /v1/generation` gives what its ledger row took, with the
 * provider, endpoint, tokens by kind and the prices applied. The usage export (each grouping, JSON and CSV) sums to
 * the account's debits to the nano-USD. Another account's requests are 404 and never exported; a project key sees
 * only its own; `GET /v1/key` counts a test key's requests. On SQLite, and on PostgreSQL with Redis.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DEFAULT_MODELS } from '../../src/config/default-catalog.js';
import type { LedgerRecord } from '../../src/storage/index.js';
import { describeEach } from '../support/backends.js';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { startMockAnthropic, type MockAnthropic } from '../support/mock-anthropic.js';
import { startMockOpenAI, type MockOpenAI } from '../support/mock-openai.js';
import { REDIS_TEST_URL } from '../support/redis.js';

const OPENAI_MODEL = DEFAULT_MODELS.find((m) => m.id === 'gpt-6-luna')!;
const CLAUDE = 'claude-sonnet-5-5';
const LONG_PROMPT = 'The quarterly report covers revenue, costs and the outlook. '.repeat(150);

const CONFIGURATIONS: Array<{ name: string; dialect: 'sqlite' | 'postgres'; env: Record<string, string> }> = [
  { name: 'SQLite', dialect: 'sqlite', env: {} },
  {
    name: 'PostgreSQL and Redis',
    dialect: 'postgres',
    env: { REDIS_URL: REDIS_TEST_URL, TOLLGATE_REDIS_PREFIX: `tgtest:charges:${process.pid}:${Date.now()}:` },
  },
];

/** A request made, and what its client saw: the answer's id, the x-request-id, the cost. */
interface Seen {
  id: string | undefined;
  requestId: string;
  endpoint: string;
  streamed: boolean;
  cost: number;
}

describeEach(CONFIGURATIONS)('every charge explained on $name', ({ dialect, env }) => {
  let gw: TestGateway;
  let openaiUpstream: MockOpenAI;
  let anthropicUpstream: MockAnthropic;
  let owner: { id: string; key: string };
  let other: { id: string; key: string };

  beforeAll(async () => {
    openaiUpstream = await startMockOpenAI({ apiKey: 'sk-charges', promptCaching: true });
    anthropicUpstream = await startMockAnthropic({ apiKey: 'sk-ant-charges' });
    gw = await startGateway({
      dialect,
      env: {
        ...env,
        OPENAI_API_KEY: 'sk-charges',
        OPENAI_BASE_URL: openaiUpstream.url,
        ANTHROPIC_API_KEY: 'sk-ant-charges',
        ANTHROPIC_BASE_URL: anthropicUpstream.url,
      },
    });
    owner = await gw.account();
    other = await gw.account();
    for (const { id } of [owner, other])
      await gw.admin('PATCH', `/admin/accounts/${id}`, { requests_per_minute: 10_000 });
  });
  afterAll(async () => {
    await gw?.close();
    await openaiUpstream?.close();
    await anthropicUpstream?.close();
  });

  const get = async (key: string, path: string) => {
    const response = await fetch(`${gw.baseURL}${path}`, { headers: { authorization: `Bearer ${key}` } });
    const text = await response.text();
    const type = response.headers.get('content-type') ?? '';
    return { status: response.status, type, text, body: type.startsWith('application/json') ? JSON.parse(text) : null };
  };
  const debits = async (accountId: string): Promise<LedgerRecord[]> =>
    (await gw.app.storage.ledger.list(accountId, { limit: 1_000 })).filter((e) => e.kind === 'debit');
  const debitOf = async (accountId: string, requestId: string) =>
    (await debits(accountId)).find((e) => e.requestId === requestId)!;
  const nano = (usd: number) => BigInt(Math.round(usd * 1e9));

  it('explains each endpoint’s charge, found by the answer’s id and by its x-request-id', async () => {
    const openai = gw.client(owner.key);
    const anthropic = new Anthropic({ apiKey: owner.key, baseURL: gw.url, maxRetries: 0 });
    const seen: Seen[] = [];
    /** A whole answer as the SDK returned it (`withResponse()`): its id, x-request-id and cost. */
    const answered = (
      endpoint: string,
      { data, response }: { data: { id?: string; usage?: unknown }; response: Response },
    ) =>
      seen.push({
        id: data.id,
        requestId: response.headers.get('x-request-id')!,
        endpoint,
        streamed: false,
        cost: (data.usage as { cost: number }).cost,
      });

    // The same long prompt twice: the provider reports the second one's prefix as cached input.
    for (let i = 0; i < 2; i++) {
      const chat = openai.chat.completions.create({
        model: OPENAI_MODEL.id,
        messages: [{ role: 'user', content: LONG_PROMPT }],
      });
      answered('/v1/chat/completions', await chat.withResponse());
    }
    const stream = await openai.chat.completions
      .create({
        model: 'sandbox/echo',
        stream: true,
        stream_options: { include_usage: true },
        messages: [{ role: 'user', content: 'stream me' }],
      })
      .withResponse();
    let streamId = '';
    let streamCost = 0;
    for await (const chunk of stream.data) {
      streamId = chunk.id;
      if (chunk.usage) streamCost = (chunk.usage as unknown as { cost: number }).cost;
    }
    seen.push({
      id: streamId,
      requestId: stream.response.headers.get('x-request-id')!,
      endpoint: '/v1/chat/completions',
      streamed: true,
      cost: streamCost,
    });
    answered(
      '/v1/completions',
      await openai.completions.create({ model: 'sandbox/echo', prompt: 'complete me', max_tokens: 5 }).withResponse(),
    );
    const embedding = openai.embeddings.create(
      { model: 'sandbox/embed', input: ['one', 'two'] },
      { headers: { 'x-request-id': `embed-${dialect}` } },
    );
    // Embeddings have no id: found by the x-request-id only.
    const { data: vectors, response: embedded } = await embedding.withResponse();
    answered('/v1/embeddings', { data: { usage: vectors.usage }, response: embedded });
    answered(
      '/v1/responses',
      await openai.responses.create({ model: 'sandbox/echo', input: 'respond' }).withResponse(),
    );
    for (const model of ['sandbox/echo', CLAUDE]) {
      const message = anthropic.messages.create({
        model,
        max_tokens: 50,
        messages: [{ role: 'user', content: 'hello' }],
      });
      answered('/v1/messages', await message.withResponse());
    }

    for (const request of seen) {
      const row = await debitOf(owner.id, request.requestId);
      expect(row, request.endpoint).toBeDefined();
      for (const id of [request.id, request.requestId, row.id].filter((v) => v !== undefined)) {
        const { status, body } = await get(owner.key, `/generation?id=${encodeURIComponent(id)}`);
        expect(status, `${request.endpoint} by ${id}`).toBe(200);
        expect(body).toMatchObject({
          object: 'generation',
          id: request.requestId,
          endpoint: request.endpoint,
          streamed: request.streamed,
          cancelled: false,
          cost_nano: String(-row.amountNano),
          ledger_entry: { id: row.id },
        });
        if (request.id !== undefined) expect(body.answer_id).toBe(request.id);
        expect(nano(body.cost)).toBe(nano(request.cost));
        expect(body.breakdown.charged_nano).toBe(String(-row.amountNano));
        expect(body.key.name).toBe('default');
        expect(body.latency_ms).toBeGreaterThanOrEqual(0);
        expect(body.tokens.prompt).toBe(row.promptTokens);
        expect(body.tokens.completion).toBe(row.completionTokens);
      }
    }

    const [cold, warm] = await Promise.all(
      seen.slice(0, 2).map(async (r) => (await get(owner.key, `/generation?id=${r.id}`)).body),
    );
    expect(cold).toMatchObject({ provider: 'openai', model: OPENAI_MODEL.id, finish_reason: 'stop' });
    // The warm request's cached input is billed on its own line, at the cache-read price.
    expect(warm.tokens.cached_input).toBeGreaterThan(0);
    const cachedLine = warm.breakdown.lines.find((l: { kind: string }) => l.kind === 'cached_input');
    expect(cachedLine).toMatchObject({
      quantity: warm.tokens.cached_input,
      price_per_million: OPENAI_MODEL.pricing.input_cache_read! * 1000,
    });
    const pricedPico = warm.breakdown.lines.reduce(
      (sum: bigint, l: { cost: string }) => sum + usdToUnits(l.cost, 12),
      0n,
    );
    expect((pricedPico + 999n) / 1000n).toBe(BigInt(warm.breakdown.priced_nano));

    const streamed = (await get(owner.key, `/generation?id=${streamId}`)).body;
    expect(streamed.time_to_first_token_ms).not.toBeNull();
    expect(streamed.provider).toBe('sandbox');
    const claude = (await get(owner.key, `/generation?id=${seen.at(-1)!.id}`)).body;
    expect(claude).toMatchObject({ provider: 'anthropic', model: CLAUDE, finish_reason: 'end_turn' });
  });

  it('marks a stream the client cut', async () => {
    openaiUpstream.setBehavior({ kind: 'ok', content: 'word '.repeat(40), chunks: 40, delayMs: 40 });
    const controller = new AbortController();
    const requestId = `cut-${dialect}-${Date.now()}`;
    const stream = await gw
      .client(owner.key)
      .chat.completions.create(
        { model: OPENAI_MODEL.id, stream: true, messages: [{ role: 'user', content: 'a long answer' }] },
        { signal: controller.signal, headers: { 'x-request-id': requestId } },
      );
    try {
      for await (const _chunk of stream) {
        controller.abort();
      }
    } catch {
      // the abort ends the iteration
    }
    openaiUpstream.setBehavior({ kind: 'ok' });
    await expect
      .poll(async () => (await get(owner.key, `/generation?id=${requestId}`)).body?.cancelled, { timeout: 5_000 })
      .toBe(true);
    const { body } = await get(owner.key, `/generation?id=${requestId}`);
    expect(body).toMatchObject({ streamed: true, provider: 'openai' });
    expect(BigInt(body.cost_nano)).toBeGreaterThan(0n);
  });

  it('keeps each account’s requests its own; a project key sees only its own', async () => {
    const theirs = await gw
      .client(other.key)
      .chat.completions.create({ model: 'sandbox/echo', messages: [{ role: 'user', content: 'mine' }] })
      .withResponse();
    const theirId = theirs.data.id;
    const theirRequestId = theirs.response.headers.get('x-request-id')!;
    const theirRow = await debitOf(other.id, theirRequestId);
    for (const id of [theirId, theirRequestId, theirRow.id]) {
      const { status, body } = await get(owner.key, `/generation?id=${id}`);
      expect(status).toBe(404);
      expect(body.error.code).toBe('not_found');
    }
    expect((await get(owner.key, '/usage?format=csv')).text).not.toContain(theirRequestId);

    const readOnly = await gw.key(other.id, { permissions: 'read_only' });
    expect((await get(readOnly.key, `/generation?id=${theirId}`)).status).toBe(200);

    const project = await gw.key(other.id, { permissions: 'project' });
    expect((await get(project.key, `/generation?id=${theirId}`)).status).toBe(404);
    const own = await gw
      .client(project.key)
      .chat.completions.create({ model: 'sandbox/echo', messages: [{ role: 'user', content: 'project' }] });
    expect((await get(project.key, `/generation?id=${own.id}`)).body.key.id).toBe(project.id);
    const projectUsage = (await get(project.key, '/usage')).body;
    expect(projectUsage.data.map((r: { key_id: string }) => r.key_id)).toEqual([project.id]);
  });

  it('exports usage that sums to the ledger exactly, in every grouping, as JSON and CSV', async () => {
    const rows = await debits(owner.id);
    expect(rows.length).toBeGreaterThan(5);
    const ledgerTotal = rows.reduce((sum, e) => sum - e.amountNano, 0n);
    for (const groupBy of ['', 'day', 'model', 'key', 'endpoint']) {
      const query = groupBy ? `?group_by=${groupBy}` : '';
      const json = (await get(owner.key, `/usage${query}`)).body;
      expect(json.group_by).toBe(groupBy || null);
      const sum = json.data.reduce((s: bigint, r: { cost_nano: string }) => s + BigInt(r.cost_nano), 0n);
      expect(sum, `json ${groupBy}`).toBe(ledgerTotal);
      expect(BigInt(json.total.cost_nano)).toBe(ledgerTotal);
      expect(json.total.requests).toBe(rows.length);

      const csv = await get(owner.key, `/usage${query}${query ? '&' : '?'}format=csv`);
      expect(csv.type).toContain('text/csv');
      const [header, ...lines] = csv.text.trim().split('\r\n');
      const column = header!.split(',').indexOf('cost');
      const csvSum = lines.reduce((s, line) => s + usdToNano(line.split(',')[column]!), 0n);
      expect(csvSum, `csv ${groupBy}`).toBe(ledgerTotal);
    }
    // Each per-request row leads to its request.
    const csv = (await get(owner.key, '/usage?format=csv')).text.trim().split('\r\n');
    const idColumn = csv[0]!.split(',').indexOf('request_id');
    for (const line of csv.slice(1, 4)) {
      expect((await get(owner.key, `/generation?id=${line.split(',')[idColumn]}`)).status).toBe(200);
    }
  });

  it('tells the calling key its usage, test and read-only keys included', async () => {
    const test = await gw.key(owner.id, { environment: 'test', name: 'ci' });
    for (let i = 0; i < 2; i++)
      await gw
        .client(test.key)
        .chat.completions.create({ model: 'sandbox/echo', messages: [{ role: 'user', content: `test ${i}` }] });
    const { status, body } = await get(test.key, '/key');
    expect(status).toBe(200);
    expect(body).toMatchObject({ id: test.id, name: 'ci', environment: 'test', permissions: 'full' });
    expect(body.usage_daily).toMatchObject({ requests: 2, credits_used: 0 });
    expect(body.usage_monthly.requests).toBe(2);

    const live = (await get(owner.key, '/key')).body;
    const spent = (await debits(owner.id)).filter((e) => e.keyId === live.id).reduce((s, e) => s - e.amountNano, 0n);
    expect(nano(live.usage_daily.credits_used)).toBe(spent);
    expect(nano(live.spent)).toBe(spent);

    const readOnly = await gw.key(owner.id, { permissions: 'read_only' });
    expect((await get(readOnly.key, '/key')).body).toMatchObject({
      permissions: 'read_only',
      usage_daily: { requests: 0 },
    });
  });

  it('refuses a bad query with a 400 naming the parameter', async () => {
    for (const [query, param] of [
      ['from=2026-02-30', 'from'],
      ['to=yesterday', 'to'],
      ['from=2026-11-02&to=2026-11-01', 'from'],
      ['group_by=hour', 'group_by'],
      ['format=xml', 'format'],
    ]) {
      const { status, body } = await get(owner.key, `/usage?${query}`);
      expect(status, query).toBe(400);
      expect(body.error.param).toBe(param);
    }
    expect((await get(owner.key, '/generation')).status).toBe(400);
  });
});

/** An exact decimal USD amount in units of 10^-decimals USD. */
function usdToUnits(text: string, decimals: number): bigint {
  const [whole, fraction = ''] = text.split('.');
  return BigInt(whole!) * 10n ** BigInt(decimals) + BigInt(fraction.padEnd(decimals, '0'));
}

const usdToNano = (text: string) => usdToUnits(text, 9);
