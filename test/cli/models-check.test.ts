/**
 * `tollgate models check`, run as a child process against local servers speaking each provider's model-list format:
 * OpenAI's one page of `{data: [{id}]}`, Anthropic's pages chained by `has_more` / `last_id` (with `x-api-key` and
 * `anthropic-version`), Gemini's pages chained by `nextPageToken` with `models/`-prefixed names. The providers and
 * the catalog are configured as for the gateway: `<ENV>_API_KEY` / `<ENV>_BASE_URL` and a TOLLGATE_CONFIG file.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { cli } from '../support/cli.js';

const OPENAI_KEY = 'sk-openai-test';
const ANTHROPIC_KEY = 'sk-ant-test';
const GEMINI_KEY = 'gem-test';
const LOCAL_KEY = 'local-test';

/** What each server lists. */
const OPENAI_SERVED = ['gpt-a', 'gpt-embed', 'gpt-extra', 'whisper-x'];
const ANTHROPIC_SERVED = ['claude-a', 'claude-b', 'claude-c', 'claude-d', 'claude-e'];
const GEMINI_SERVED = ['gemini-a', 'gemini-b-001', 'gemini-embed', 'gemini-old'];
const LOCAL_SERVED = ['local/gpt-a'];

interface Listening {
  url: string;
  server: Server;
  /** Every request's path and query, in order. */
  requests: string[];
}

function listen(handler: (req: IncomingMessage, url: URL, res: ServerResponse) => void): Promise<Listening> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    requests.push(`${url.pathname}${url.search}`);
    handler(req, url, res);
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, requests }),
    ),
  );
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/** OpenAI-compatible `GET /v1/models`, Bearer key. */
const openAiServer = (key: string, served: string[]) =>
  listen((req, url, res) => {
    if (req.headers.authorization !== `Bearer ${key}`)
      return send(res, 401, { error: { message: 'Incorrect API key provided', type: 'invalid_request_error' } });
    if (url.pathname !== '/v1/models') return send(res, 404, { error: { message: 'not found' } });
    send(res, 200, {
      object: 'list',
      data: served.map((id) => ({ id, object: 'model', created: 1_790_000_000, owned_by: 'test' })),
    });
  });

/** Anthropic `GET /v1/models`: two models a page whatever `limit` says, newest first, `after_id` for the next. */
const anthropicServer = () =>
  listen((req, url, res) => {
    if (req.headers['x-api-key'] !== ANTHROPIC_KEY)
      return send(res, 401, {
        type: 'error',
        error: { type: 'authentication_error', message: 'invalid x-api-key' },
      });
    if (req.headers['anthropic-version'] !== '2023-06-01')
      return send(res, 400, { type: 'error', error: { type: 'invalid_request_error', message: 'version' } });
    if (url.pathname !== '/v1/models') return send(res, 404, { type: 'error', error: { type: 'not_found_error' } });
    const after = url.searchParams.get('after_id');
    const start = after ? ANTHROPIC_SERVED.indexOf(after) + 1 : 0;
    const page = ANTHROPIC_SERVED.slice(start, start + 2);
    send(res, 200, {
      data: page.map((id) => ({ type: 'model', id, display_name: id, created_at: '2026-01-01T00:00:00Z' })),
      has_more: start + page.length < ANTHROPIC_SERVED.length,
      first_id: page[0] ?? null,
      last_id: page.at(-1) ?? null,
    });
  });

/** Gemini `GET /v1beta/models`: three models a page, `nextPageToken` for the next, names `models/x`. */
const geminiServer = () =>
  listen((req, url, res) => {
    const key = req.headers['x-goog-api-key'] ?? url.searchParams.get('key');
    if (key !== GEMINI_KEY)
      return send(res, 400, {
        error: { code: 400, message: 'API key not valid. Please pass a valid API key.', status: 'INVALID_ARGUMENT' },
      });
    if (url.pathname !== '/v1beta/models') return send(res, 404, { error: { code: 404, status: 'NOT_FOUND' } });
    const start = Number(url.searchParams.get('pageToken') ?? '0');
    const page = GEMINI_SERVED.slice(start, start + 3);
    const more = start + page.length < GEMINI_SERVED.length;
    send(res, 200, {
      models: page.map((id) => ({ name: `models/${id}`, displayName: id, supportedGenerationMethods: [] })),
      ...(more ? { nextPageToken: String(start + page.length) } : {}),
    });
  });

const CHAT = {
  chat: true,
  completion: false,
  function_calling: true,
  vision: false,
  embeddings: false,
  json_mode: true,
};
const EMBED = { ...CHAT, chat: false, function_calling: false, json_mode: false, embeddings: true };

function model(id: string, provider: string, extra: Record<string, unknown> = {}) {
  const embeddings = id.includes('embed');
  return {
    id,
    provider,
    pricing: { prompt: 0.001, completion: embeddings ? 0 : 0.002 },
    context_length: 8_192,
    max_tokens: embeddings ? 0 : 1_024,
    capabilities: embeddings ? EMBED : CHAT,
    created: 1_790_000_000,
    ...extra,
  };
}

describe('tollgate models check', () => {
  let dir: string;
  let openai: Listening;
  let anthropic: Listening;
  let gemini: Listening;
  let local: Listening;
  let env: Record<string, string>;

  const writeConfig = (name: string, models: unknown[]): string => {
    const file = join(dir, name);
    writeFileSync(
      file,
      stringify({
        default_models: false,
        providers: { local: { api: 'openai', base_url: `${local.url}/v1`, api_key: LOCAL_KEY } },
        models,
      }),
    );
    return file;
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-models-check-'));
    [openai, anthropic, gemini, local] = await Promise.all([
      openAiServer(OPENAI_KEY, OPENAI_SERVED),
      anthropicServer(),
      geminiServer(),
      openAiServer(LOCAL_KEY, LOCAL_SERVED),
    ]);
    env = {
      OPENAI_API_KEY: OPENAI_KEY,
      OPENAI_BASE_URL: `${openai.url}/v1`,
      ANTHROPIC_API_KEY: ANTHROPIC_KEY,
      ANTHROPIC_BASE_URL: `${anthropic.url}/v1`,
      GEMINI_API_KEY: GEMINI_KEY,
      GEMINI_BASE_URL: `${gemini.url}/v1beta`,
      // A base URL without its key: the gateway keeps Groq's models inactive, so its list is not asked.
      GROQ_BASE_URL: `${openai.url}/v1`,
    };
  });

  afterAll(async () => {
    await Promise.all([openai, anthropic, gemini, local].map((l) => new Promise((r) => l.server.close(r))));
    rmSync(dir, { recursive: true, force: true });
  });

  it('reports, per provider, the catalog models it does not serve and the models the catalog lacks; exits 1', async () => {
    for (const server of [openai, anthropic, gemini, local]) server.requests.length = 0;
    const config = writeConfig('mixed.yaml', [
      model('gpt-a', 'openai'),
      model('gpt-b', 'openai'),
      model('gpt-embed', 'openai'),
      // Two deployments: OpenAI serves it as gpt-a, the custom provider under its own name.
      model('gpt-a-anywhere', 'openai', {
        upstream_model: 'gpt-a',
        deployments: [{ provider: 'openai' }, { provider: 'local', upstream_model: 'local/gpt-a' }],
      }),
      model('claude-e', 'anthropic'),
      model('claude-a', 'anthropic', { aliases: ['claude-latest'] }),
      model('claude-z', 'anthropic'),
      model('gemini-b', 'gemini', { upstream_model: 'gemini-b-001' }),
      model('gemini-gone', 'gemini', { upstream_model: 'gemini-gone-002' }),
      model('gemini-embed', 'gemini'),
      model('groq/some-model', 'groq', { upstream_model: 'some-model' }),
    ]);
    const run = await cli(dir, ['models', 'check', '--json'], { ...env, TOLLGATE_CONFIG: config });
    expect(run.stderr).toBe('');
    expect(run.code).toBe(1);
    const report = JSON.parse(run.stdout);
    expect(report.ok).toBe(false);
    const by = (id: string) => report.providers.find((p: any) => p.provider === id);
    expect(report.providers.map((p: any) => p.provider).sort()).toEqual([
      'anthropic',
      'gemini',
      'groq',
      'local',
      'openai',
    ]);

    expect(by('openai')).toMatchObject({
      status: 'ok',
      catalog: 3,
      served: 4,
      not_served: [{ upstream_model: 'gpt-b', models: ['gpt-b'] }],
      not_in_catalog: ['gpt-extra', 'whisper-x'],
    });
    // Every page was read: claude-e is on the last of three.
    expect(by('anthropic')).toMatchObject({
      status: 'ok',
      catalog: 3,
      served: 5,
      not_served: [{ upstream_model: 'claude-z', models: ['claude-z'] }],
      not_in_catalog: ['claude-b', 'claude-c', 'claude-d'],
    });
    expect(anthropic.requests.filter((r) => r.startsWith('/v1/models'))).toEqual([
      '/v1/models?limit=1000',
      '/v1/models?limit=1000&after_id=claude-b',
      '/v1/models?limit=1000&after_id=claude-d',
    ]);
    // Names compared without Gemini's `models/` prefix; the catalog's upstream names, not its ids.
    expect(by('gemini')).toMatchObject({
      status: 'ok',
      catalog: 3,
      served: 4,
      not_served: [{ upstream_model: 'gemini-gone-002', models: ['gemini-gone'] }],
      not_in_catalog: ['gemini-a', 'gemini-old'],
    });
    expect(gemini.requests).toEqual(['/v1beta/models?pageSize=1000', '/v1beta/models?pageSize=1000&pageToken=3']);
    expect(by('local')).toMatchObject({ status: 'ok', catalog: 1, served: 1, not_served: [], not_in_catalog: [] });
    expect(by('groq')).toMatchObject({ status: 'skipped', catalog: 1, not_served: [], not_in_catalog: [] });
    expect(by('groq').detail).toContain('GROQ_API_KEY');
    // The keys went where each provider expects them, never in a URL.
    for (const server of [openai, anthropic, gemini, local])
      for (const request of server.requests) expect(request).not.toMatch(/key=/);
  });

  it('prints a table and the missing models in text, naming the catalog models behind an upstream name', async () => {
    const config = writeConfig('text.yaml', [
      model('gpt-a', 'openai'),
      model('gpt-old', 'openai', { upstream_model: 'gpt-retired' }),
      model('claude-a', 'anthropic'),
    ]);
    const run = await cli(dir, ['models', 'check'], { ...env, TOLLGATE_CONFIG: config });
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^PROVIDER\s+BASE URL\s+RESULT\s+CATALOG\s+SERVED\s+NOT SERVED\s+NOT IN CATALOG/);
    expect(run.stdout).toMatch(/openai\s+\S+\s+MISSING\s+2\s+4\s+1\s+3/);
    expect(run.stdout).toMatch(/anthropic\s+\S+\s+ok\s+1\s+5\s+0\s+4/);
    expect(run.stdout).toContain('gpt-retired  (catalog: gpt-old)');
    expect(run.stdout).toContain('served but not in the catalog: gpt-embed, gpt-extra, whisper-x');
    expect(run.stdout).toContain('1 catalog model(s) not served');
  });

  it('exits 0 when every catalog model is served', async () => {
    const config = writeConfig('served.yaml', [
      model('gpt-a', 'openai'),
      model('claude-d', 'anthropic'),
      model('gemini-a', 'gemini'),
    ]);
    const run = await cli(dir, ['models', 'check', '--json'], { ...env, TOLLGATE_CONFIG: config });
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout);
    expect(report.ok).toBe(true);
    for (const provider of report.providers) expect(provider.not_served).toEqual([]);
  });

  it('says which key was refused and exits 2 when a provider cannot be asked', async () => {
    const config = writeConfig('refused.yaml', [model('claude-a', 'anthropic'), model('gpt-a', 'openai')]);
    const run = await cli(dir, ['models', 'check', '--json'], {
      ...env,
      ANTHROPIC_API_KEY: 'sk-ant-wrong',
      TOLLGATE_CONFIG: config,
    });
    expect(run.code).toBe(2);
    const report = JSON.parse(run.stdout);
    expect(report.ok).toBe(false);
    const refused = report.providers.find((p: any) => p.provider === 'anthropic');
    expect(refused).toMatchObject({ status: 'error', catalog: 1, not_served: [], not_in_catalog: [] });
    expect(refused.detail).toBe('the key was refused (HTTP 401): check ANTHROPIC_API_KEY');
    expect(refused.served).toBeUndefined();
    expect(JSON.stringify(report)).not.toContain('sk-ant-wrong');
  });
});
