/** Fake dependencies of the request path: in memory, no network, no database; each records what it was asked. */
import { completionTokensOf, promptTokensOf, type TokenUsage } from '../../src/pricing/index.js';
import { expect, vi } from 'vitest';
import type { Settlement } from '../../src/billing/index.js';
import { Catalog, type CatalogModel } from '../../src/catalog/index.js';
import { loadConfig } from '../../src/config/index.js';
import { GatewayError } from '../../src/errors/index.js';
import type { GatewayEvent } from '../../src/events/index.js';
import { Idempotency, type Answer, type GatewayDeps, type RequestInput } from '../../src/gateway/index.js';
import type { RateDecision } from '../../src/limits/index.js';
import type { UpstreamCompletion, UpstreamChunk, Provider } from '../../src/providers/index.js';
import {
  Breaker,
  type AttemptCall,
  type Deployment,
  type Route,
  type Routed,
  type Way,
} from '../../src/routing/index.js';
import type { IdempotencyRecord, IdempotencyStore, KeyRecord, NewClaim } from '../../src/storage/index.js';

import type { StreamEvent } from '../../src/wire/index.js';

export const API_KEY = 'Bearer tg_good';
export const MODEL = 'gpt-6-luna';

/** A live, full-permission key of `acct_1` with no limits and no owner; `overrides` set the fields a test is about. */
export function fakeKey(overrides: Partial<KeyRecord> = {}): KeyRecord {
  return {
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
    limitReset: null,
    periodSpentNano: 0n,
    period: '',
    expiresAt: null,
    requestsPerMinute: null,
    tokensPerMinute: null,
    allowedIps: [],
    ownerUserId: null,
    ownerRole: null,
    ownerEmail: null,
    ...overrides,
  };
}

export const key = fakeKey();

export const account = { id: 'acct_1', plan: 'free', settings: {} };

const catalog = new Catalog(loadConfig({ env: { TOLLGATE_DATA_DIR: '/tmp/unused' }, file: undefined }));

export function model(name = MODEL): CatalogModel {
  return catalog.resolve(name);
}

export function completion(
  text: string,
  usage?: { prompt_tokens: number; completion_tokens: number },
): UpstreamCompletion {
  return {
    id: 'chatcmpl-up',
    object: 'chat.completion',
    created: 1,
    model: 'upstream-name',
    choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
    ...(usage ? { usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens } } : {}),
  };
}

export function chunk(content: string, extra: Partial<UpstreamChunk> = {}): UpstreamChunk {
  return {
    id: 'chatcmpl-up',
    object: 'chat.completion.chunk',
    created: 1,
    model: 'upstream-name',
    choices: [{ index: 0, delta: { content }, finish_reason: null }],
    ...extra,
  };
}

/** An upstream's stream of chunks (or events), yielded as they would arrive. */
export function streamOf<T>(items: T[]): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator]: () => {
      const rest = items.values();
      return { next: () => Promise.resolve(rest.next()) };
    },
  };
}

function decision(allowed: boolean): RateDecision {
  const window = { limit: 60, remaining: allowed ? 59 : 0, resetMs: 1_000 };
  return {
    allowed,
    retryAfterSeconds: 7,
    requests: window,
    tokens: { ...window, limit: 100_000 },
    completionBound: allowed ? 1_000 : 0,
    second: 1_000,
  };
}

/** What a test sets up: the upstream's behaviour, the wallet's verdict, the rate limiter's. */
export interface Setup {
  /** What the deployment's provider does (each method may throw: the upstream failed). Default: a chat answer with usage 10 + 5. */
  provider?: Partial<Omit<Provider, 'id'>>;
  /** The deployment that answers or fails (default: the requested model, at `openai`). */
  answeredBy?: { model: CatalogModel; providerId: string };
  /** Thrown by `wallet.reserve` (e.g. 402). */
  refuse?: GatewayError;
  /** The completion bound the wallet lowers the request to. */
  lowerTo?: number;
  /** Admission allows the completion bound the request asked for (else the model's), as the wallet does; default 1_000. */
  admitAsRequested?: boolean;
  rateLimited?: boolean;
}

export function fakeDeps(setup: Setup = {}) {
  const calls: Array<{ method: string; body: Record<string, unknown>; headers?: unknown }> = [];
  const events: GatewayEvent[] = [];
  const logs: Record<string, unknown>[] = [];
  const settled: {
    promptTokens: number;
    completionTokens: number;
    usage: TokenUsage;
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
    whenClosed: vi.fn(),
    release: vi.fn(function (this: { released: number }) {
      this.released++;
    }),
    settle: vi.fn(
      (request: Omit<(typeof settled)[number], 'promptTokens' | 'completionTokens'> & { usage: TokenUsage }) => {
        // Recorded with the totals of the usage it was asked to settle.
        const totals = {
          promptTokens: promptTokensOf(request.usage),
          completionTokens: completionTokensOf(request.usage),
        };
        settled.push({ ...request, ...totals });
        const billed = { ...totals, usage: request.usage, chargedNano: 1_500_000n };
        if (request.event) events.push(request.event(billed));
        return Promise.resolve(billed);
      },
    ),
  };
  // The provider records every call it is asked, then does what the test set up.
  const behaviour: Partial<Omit<Provider, 'id'>> = {
    complete: () => Promise.resolve(completion('Hello there', { prompt_tokens: 10, completion_tokens: 5 })),
    stream: () => streamOf([chunk('Hello'), chunk(' there')]),
    ...setup.provider,
  };
  const provider: Record<string, unknown> = { id: 'fake' };
  for (const [method, act] of Object.entries(behaviour)) {
    if (typeof act !== 'function') continue;
    provider[method] = (call: { body: Record<string, unknown>; headers?: unknown }) => {
      calls.push({ method, body: call.body, headers: call.headers });
      return (act as (call: unknown) => unknown)(call);
    };
  }
  const deploymentOf = (route: { model: CatalogModel }): Deployment => {
    const by = setup.answeredBy ?? { model: route.model, providerId: 'openai' };
    return {
      model: by.model,
      providerId: by.providerId,
      upstreamModel: 'upstream-name',
      weight: undefined,
      provider: provider as unknown as Provider,
      breaker: new Breaker(Number.POSITIVE_INFINITY, 1),
      probing: false,
    };
  };
  const route = (requested: CatalogModel): Route => ({
    model: requested,
    providerId: 'openai',
    models: [requested],
    candidates: [deploymentOf({ model: requested })],
    deadline: 0,
  });
  const router = {
    route: vi.fn((requested: CatalogModel) => route(requested)),
    run: vi.fn(async <T>(r: Route, call: AttemptCall, way: Way<T>): Promise<Routed<T>> => {
      const deployment = r.candidates[0]!;
      const named = { model: deployment.model, providerId: deployment.providerId };
      try {
        return { ok: true, result: await way.attempt(deployment, call), ...named };
      } catch (error) {
        return { ok: false, error, ...named };
      }
    }),
  };
  const wallet = {
    accounts: { get: (id: string) => Promise.resolve(id === account.id ? account : undefined) },
    reserve: vi.fn((request?: { requestedMaxTokens?: number | undefined; modelMaxTokens: number }) => {
      if (setup.refuse) return Promise.reject(setup.refuse);
      if (setup.admitAsRequested && request && setup.lowerTo === undefined)
        reservation.admission.maxTokens = request.requestedMaxTokens ?? request.modelMaxTokens;
      return Promise.resolve(reservation);
    }),
  };
  const limiter = {
    admit: vi.fn(() => decision(!setup.rateLimited)),
    peek: vi.fn(() => decision(!setup.rateLimited)),
    giveBack: vi.fn(),
  };
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

/** A request's input on the fake key: `body` over the endpoint's defaults; its access-log lines kept in `lines`. */
export function inputOf(
  defaults: Record<string, unknown>,
  body: Record<string, unknown> = {},
  extra: Partial<RequestInput> = {},
): RequestInput & { lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const sent = { ...defaults, ...body };
  return {
    authorization: API_KEY,
    clientIp: '127.0.0.1',
    body: sent,
    // As its Content-Length says (a body over 8 KiB is rate-checked before it is measured).
    bodyBytes: Buffer.byteLength(JSON.stringify(sent)),
    requestId: 'req_1',
    signal: new AbortController().signal,
    log: (fields) => void lines.push(fields),
    lines,
    ...extra,
  };
}

/** The GatewayError a request path threw. */
export async function refusal(promise: Promise<unknown>): Promise<GatewayError> {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(GatewayError);
  return error as GatewayError;
}

/** A streamed answer's events, read to the end. */
export async function drain<B>(result: Answer<B>): Promise<StreamEvent[]> {
  if (result.kind !== 'stream') throw new Error('expected a stream');
  const events: StreamEvent[] = [];
  for await (const event of result.events) events.push(event);
  return events;
}
