/** Fake dependencies of the request path: in memory, no network, no database; each records what it was asked. */
import { vi } from 'vitest';
import type { Settlement } from '../../src/billing/index.js';
import { Catalog, type CatalogModel } from '../../src/catalog/index.js';
import { loadConfig } from '../../src/config/index.js';
import { GatewayError } from '../../src/errors/index.js';
import type { GatewayEvent } from '../../src/events/index.js';
import { Idempotency, type GatewayDeps } from '../../src/gateway/index.js';
import type { RateDecision } from '../../src/limits/index.js';
import type { ChatCompletion, ChatCompletionChunk, ProviderCall } from '../../src/providers/index.js';
import type { Route, Routed, StreamStart } from '../../src/routing/index.js';
import type { IdempotencyRecord, IdempotencyStore, KeyRecord, NewClaim } from '../../src/storage/index.js';

export const API_KEY = 'Bearer tg_good';
export const MODEL = 'gpt-6-luna';

export const key: KeyRecord = {
  id: 'key_1',
  accountId: 'acct_1',
  name: 'k',
  hint: 'tg_…good',
  environment: 'live',
  permissions: 'full',
  models: [],
  spendLimitNano: null,
  spentNano: 0n,
  createdAt: 0,
  lastUsedAt: null,
  revokedAt: null,
};

export const account = { id: 'acct_1', plan: 'free', settings: {} };

const catalog = new Catalog(loadConfig({ env: { TOLLGATE_DATA_DIR: '/tmp/unused' }, file: undefined }));

export function model(name = MODEL): CatalogModel {
  return catalog.resolve(name);
}

export function completion(text: string, usage?: { prompt_tokens: number; completion_tokens: number }): ChatCompletion {
  return {
    id: 'chatcmpl-up',
    object: 'chat.completion',
    created: 1,
    model: 'upstream-name',
    choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
    ...(usage ? { usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } } : {}),
  };
}

export function chunk(content: string, extra: Partial<ChatCompletionChunk> = {}): ChatCompletionChunk {
  return {
    id: 'chatcmpl-up',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'upstream-name',
    choices: [{ index: 0, delta: { content }, finish_reason: null }],
    ...extra,
  };
}

export function streamOf(chunks: ChatCompletionChunk[]): StreamStart {
  const rest = chunks.slice(1).values();
  return { first: { done: false, value: chunks[0]! }, chunks: { next: () => Promise.resolve(rest.next()) } };
}

function decision(allowed: boolean): RateDecision {
  const window = { limit: 60, remaining: allowed ? 59 : 0, resetMs: 1_000 };
  return { allowed, retryAfterSeconds: 7, requests: window, tokens: { ...window, limit: 100_000 } };
}

/** What a test sets up: the upstream's outcome, the wallet's verdict, the rate limiter's. */
export interface Setup {
  /** The routed outcome of a call (default: an answer from `openai` with usage 10 + 5). */
  routed?: (call: ProviderCall, route: Route) => Routed<ChatCompletion> | Routed<StreamStart>;
  /** Thrown by `wallet.reserve` (e.g. 402). */
  refuse?: GatewayError;
  /** The completion bound the wallet lowers the request to. */
  lowerTo?: number;
  rateLimited?: boolean;
}

export function fakeDeps(setup: Setup = {}) {
  const calls: ProviderCall[] = [];
  const events: GatewayEvent[] = [];
  const logs: Record<string, unknown>[] = [];
  const settled: {
    promptTokens: number;
    completionTokens: number;
    model: string;
    event?: (billed: Settlement) => GatewayEvent;
  }[] = [];
  const reservation = {
    admission: { lowered: setup.lowerTo !== undefined, maxTokens: setup.lowerTo ?? 1_000, holdNano: 1_000n },
    get maxTokens() {
      return this.admission.maxTokens;
    },
    account,
    key,
    released: 0,
    release: vi.fn(function (this: { released: number }) {
      this.released++;
    }),
    settle: vi.fn((request: (typeof settled)[number]) => {
      settled.push(request);
      const billed = {
        promptTokens: request.promptTokens,
        completionTokens: request.completionTokens,
        chargedNano: 1_500_000n,
      };
      if (request.event) events.push(request.event(billed));
      return Promise.resolve(billed);
    }),
  };
  const route = (requested: CatalogModel): Route => ({
    model: requested,
    providerId: 'openai',
    price: requested.price,
    candidates: [],
    deadline: 0,
  });
  const answer = (call: ProviderCall, r: Route): Routed<ChatCompletion> | Routed<StreamStart> =>
    setup.routed?.(call, r) ?? {
      ok: true,
      result: completion('Hello there', { prompt_tokens: 10, completion_tokens: 5 }),
      model: r.model,
      providerId: 'openai',
    };
  const router = {
    route: vi.fn((requested: CatalogModel) => route(requested)),
    complete: vi.fn((r: Route, call: ProviderCall) => (calls.push(call), Promise.resolve(answer(call, r)))),
    stream: vi.fn((r: Route, call: ProviderCall) => (calls.push(call), Promise.resolve(answer(call, r)))),
  };
  const wallet = {
    accounts: { get: (id: string) => Promise.resolve(id === account.id ? account : undefined) },
    reserve: vi.fn(() => (setup.refuse ? Promise.reject(setup.refuse) : Promise.resolve(reservation))),
  };
  const limiter = { admit: vi.fn(() => decision(!setup.rateLimited)), addTokens: vi.fn() };
  const metrics = { rateLimited: { inc: vi.fn() }, recordChat: vi.fn() };
  const performance = { record: vi.fn(), recordUptime: vi.fn() };
  const deps = {
    auth: {
      authenticate: (authorization: string | undefined) =>
        authorization === API_KEY ? Promise.resolve(key) : Promise.reject(new GatewayError('invalid_api_key')),
    },
    catalog,
    router,
    limiter,
    wallet,
    performance,
    metrics,
    limitsFor: () => ({}),
    upstreamTimeoutMs: 5_000,
    idempotency: new Idempotency({ store: memoryIdempotencyStore(), leaseMs: 60_000 }),
    events: { wants: () => true, emit: (event: GatewayEvent) => void events.push(event), rows: () => [] },
  };
  return {
    deps: deps as unknown as GatewayDeps,
    router,
    wallet,
    reservation,
    limiter,
    metrics,
    performance,
    calls,
    events,
    logs,
    settled,
  };
}

/** Idempotency records in a Map, with the store's claim semantics (first claim wins until released or done). */
function memoryIdempotencyStore(): IdempotencyStore {
  const records = new Map<string, IdempotencyRecord>();
  const id = (accountId: string, k: string) => `${accountId}\n${k}`;
  const store = {
    claim(claim: NewClaim) {
      const existing = records.get(id(claim.accountId, claim.key));
      if (existing) return Promise.resolve(false);
      const { fingerprint, requestId, leaseUntil } = claim;
      records.set(id(claim.accountId, claim.key), {
        fingerprint,
        claim: claim.claim,
        requestId,
        state: 'pending',
        response: null,
        expiresAt: leaseUntil,
      });
      return Promise.resolve(true);
    },
    get(accountId: string, k: string) {
      return Promise.resolve(records.get(id(accountId, k)));
    },
    complete(accountId: string, k: string, claim: string, response: string, expiresAt: number) {
      const record = records.get(id(accountId, k));
      if (!record || record.claim !== claim) return Promise.resolve(false);
      records.set(id(accountId, k), { ...record, state: 'done', response, expiresAt });
      return Promise.resolve(true);
    },
    release(accountId: string, k: string, claim: string) {
      if (records.get(id(accountId, k))?.claim === claim) records.delete(id(accountId, k));
      return Promise.resolve();
    },
    deleteExpired() {
      return Promise.resolve(0);
    },
  };
  return store as unknown as IdempotencyStore;
}

/** The request's record (metrics, log) is written in the next check phase. */
export const recorded = () => new Promise((resolve) => setImmediate(resolve));
