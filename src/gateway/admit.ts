/**
 * Admission, shared by every endpoint that takes an API key: the key and its permission, the key's account, and
 * the account's rate limits. The requests-per-minute limit covers every request of the account (spec 8), metered
 * or not; a metered request (chat, completions, embeddings, and those translated to chat) also counts its prompt
 * tokens and its completion bound x choices, and then holds credit (`routeAndReserve`).
 */
import { requirePermission, type Operation } from '../auth/index.js';
import { completionBound, type AccountState, type Reservation, type ReserveRequest } from '../billing/index.js';
import type { CatalogModel } from '../catalog/index.js';
import { GatewayError } from '../errors/index.js';
import type { CompletionAsk } from '../limits/index.js';
import { holdRates, type PriceSheet } from '../pricing/index.js';
import type { Route } from '../routing/index.js';
import type { KeyRecord } from '../storage/index.js';
import type { GatewayDeps } from './deps.js';
import { rateLimitHeaders } from './headers.js';
import { SMALL_BODY_BYTES, measureSliced } from '../tokens/index.js';
import type { RequestInput } from './request.js';
import { requireKeyUsable } from './key-checks.js';
import { admitBoth, giveBackBoth, peekBoth, type TwoWindows } from './key-rate.js';

export type AdmitDeps = Pick<GatewayDeps, 'auth' | 'wallet' | 'limiter' | 'limitsFor' | 'metrics'>;

/** Who a request comes from: its `Authorization` (or `x-api-key`) and the client's address (`request.ip`). */
export type Credentials = Pick<RequestInput, 'authorization' | 'clientIp'>;

/**
 * The key behind an `Authorization` header (401), usable now from the client's address (key-checks.ts: 401, 403)
 * and allowed to do `operation` (403).
 */
export async function authenticate(
  deps: AdmitDeps,
  { authorization, clientIp }: Credentials,
  operation: Operation,
): Promise<KeyRecord> {
  const key = await deps.auth.authenticate(authorization);
  requireKeyUsable(key, clientIp);
  requirePermission(key, operation);
  return key;
}

/** The key's account, from the in-memory cache (401 when it is gone). */
export async function accountOf(deps: AdmitDeps, key: KeyRecord): Promise<AccountState> {
  const account = await deps.wallet.accounts.get(key.accountId);
  if (!account) throw new GatewayError('invalid_api_key');
  return account;
}

/**
 * Counts one request and `promptTokens` against the account's limits and the key's own (key-rate.ts). Returns the
 * rate-limit headers (with `x-tollgate-provider` when a provider is named); refused, throws 429 with `Retry-After`
 * and the same headers.
 */
export async function admitRate(
  deps: AdmitDeps,
  account: AccountState,
  key: KeyRecord,
  promptTokens: number,
  providerId?: string,
): Promise<Record<string, string>> {
  return (await admitTokens(deps, account, key, promptTokens, providerId)).headers;
}

/** `admitRate` counting a completion too (bound x choices, the bound lowered to the room left): the decision with the headers. */
async function admitTokens(
  deps: AdmitDeps,
  account: AccountState,
  key: KeyRecord,
  promptTokens: number,
  providerId?: string,
  completion?: CompletionAsk,
): Promise<{ headers: Record<string, string>; decision: TwoWindows }> {
  const decision = await admitBoth(deps, account, key, promptTokens, completion);
  return { headers: allowedHeaders(deps, decision, providerId), decision };
}

/** The decision's rate-limit headers; refused, throws 429 with `Retry-After` and the same headers. */
function allowedHeaders(deps: AdmitDeps, decision: TwoWindows, providerId?: string): Record<string, string> {
  const headers = rateLimitHeaders(decision.shown, providerId);
  if (decision.refusal) {
    deps.metrics.rateLimited.inc({ code: 'rate_limit_exceeded' });
    throw new GatewayError('rate_limit_exceeded', {
      ...(decision.refusal.message ? { message: decision.refusal.message } : {}),
      retryAfter: decision.refusal.retryAfterSeconds,
      headers,
    });
  }
  return headers;
}

/**
 * Before a large body is read (`bytes` its Content-Length, unknown counting as large): its key (401, 403) and
 * whether the account's rate limits would let a request through (429), so that a request they refuse costs no
 * reading or parsing of its body. Every metered endpoint runs it before reading its body.
 */
export async function refuseBeforeReading(
  deps: AdmitDeps,
  credentials: Credentials,
  bytes: number | undefined,
): Promise<void> {
  if (bytes !== undefined && bytes <= SMALL_BODY_BYTES) return;
  await peekRate(deps, await authenticate(deps, credentials, 'chat'));
}

/** Throws 429 when the account's or the key's rate limits would refuse one more request now; counts nothing. */
async function peekRate(deps: AdmitDeps, key: KeyRecord): Promise<void> {
  const account = await accountOf(deps, key);
  allowedHeaders(deps, await peekBoth(deps, account, key));
}

/**
 * What `build` makes of an authenticated request, its measure (the prompt's tokens) included. Counting a large
 * body's tokens is real work: the account's rate limits are checked again first (the body may have taken long to
 * arrive), so a request they refuse costs no tokenizing, and the texts are counted in slices that yield to other
 * requests, this account's turn among others'.
 */
export function measured<T>(deps: AdmitDeps, input: RequestInput, key: KeyRecord, build: () => T): Promise<T> {
  return measureSliced(build, {
    queue: key.accountId,
    signal: input.signal,
    bytes: input.bodyBytes,
    whenLarge: () => peekRate(deps, key),
  });
}

/** The whole admission of a request that spends no tokens (the read endpoints): its key and rate-limit headers. */
export async function admit(
  deps: AdmitDeps,
  credentials: Credentials,
  operation: Operation,
): Promise<{ key: KeyRecord; headers: Record<string, string> }> {
  const key = await authenticate(deps, credentials, operation);
  const account = await accountOf(deps, key);
  return { key, headers: await admitRate(deps, account, key, 0) };
}

/** What a metered request holds credit for, besides what routing decides (the prices). */
export interface Hold extends Omit<
  ReserveRequest,
  'account' | 'key' | 'requestId' | 'price' | 'feesNano' | 'promptCeiling' | 'at'
> {
  /** The most prompt tokens the provider may bill; `promptTokens` when absent. */
  promptCeiling?: number | undefined;
  /** Input images (a per-image fee). */
  images?: number | undefined;
  /** The most server-side web searches the request allows. */
  webSearches?: number | undefined;
  /** The service tier the request asks for. */
  serviceTier?: string | undefined;
}

/** The prompt tokens held: tollgate's count, or more when the provider adds to it, never past the context. */
export function heldPrompt(hold: Hold): number {
  return Math.min(Math.max(hold.promptCeiling ?? 0, hold.promptTokens), hold.contextLength);
}

/** A service tier or web search that a model that may answer has no price for: refused (400), never forwarded. */
function refuseUnpriced(sheets: readonly PriceSheet[], hold: Hold): void {
  const tier = hold.serviceTier;
  if (tier !== undefined && sheets.some((sheet) => !sheet.serviceTiers[tier])) {
    const param = tier === 'fast' ? 'speed' : 'service_tier';
    throw new GatewayError('invalid_request', {
      message: `The service tier '${tier}' (${param}) has no price in this gateway's catalog for the model asked; send the request without it`,
      param,
    });
  }
  if (hold.webSearches && sheets.some((sheet) => sheet.webSearch === 0n))
    throw new GatewayError('invalid_request', {
      message: "Web search has no price in this gateway's catalog for the model asked; send the request without it",
      param: 'tools',
    });
}

/** A metered request's key and the models that may answer it (`model`, then the request's `models`). */
export interface Routable {
  requestId: string;
  key: KeyRecord;
  model: CatalogModel;
  fallbacks?: readonly CatalogModel[] | undefined;
  /** The request's `timeout_ms`. */
  timeoutMs?: number | undefined;
  /** Aborted when the client leaves: a reservation waiting for other holds stops. */
  signal?: AbortSignal | undefined;
}

/**
 * Steps 3 and 4 of every metered endpoint. Route: who may answer (503 when nobody can, before any credit is held)
 * and the price to hold, the dearest candidate's; an endpoint that chose its route itself passes it. Admit: the
 * rate limits first (they count requests, the prompt and the completion bound x choices, the bound lowered to the
 * window's room), then the credit hold at that bound. The window gets back what the hold did not keep at once, and
 * what the answer did not use when the reservation closes.
 */
export async function routeAndReserve(
  deps: GatewayDeps,
  { requestId, key, model, fallbacks, timeoutMs, signal }: Routable,
  hold: Hold,
  chosen?: Route,
): Promise<{ route: Route; headers: Record<string, string>; reservation: Reservation }> {
  const account = await accountOf(deps, key);
  const route = chosen ?? deps.router.route(model, key.environment, { fallbacks, timeoutMs });
  const choices = hold.choices;
  const asked = { bound: completionBound(hold), choices };
  const { headers, decision } = await admitTokens(deps, account, key, hold.promptTokens, route.providerId, asked);
  const counted = decision.completionBound * choices;
  let reservation: Reservation;
  try {
    reservation = await reserveCredit(deps, {
      requestId,
      signal,
      key,
      account,
      hold,
      route,
      rateBound: decision.completionBound,
    });
  } catch (error) {
    giveBackBoth(deps, decision, counted);
    throw error;
  }
  const held = reservation.maxTokens * choices;
  if (held < counted) {
    giveBackBoth(deps, decision, counted - held);
    const remaining = Math.min(decision.shown.tokens.limit, decision.shown.tokens.remaining + counted - held);
    headers['x-ratelimit-remaining-tokens'] = String(remaining);
  }
  reservation.whenClosed((completionTokens) => giveBackBoth(deps, decision, held - completionTokens));
  return { route, headers, reservation };
}

/** The credit hold of a routed request, at the completion bound the token window counted. */
async function reserveCredit(
  deps: GatewayDeps,
  {
    hold,
    route,
    ...request
  }: Pick<ReserveRequest, 'requestId' | 'key' | 'account' | 'rateBound' | 'signal'> & { hold: Hold; route: Route },
): Promise<Reservation> {
  const at = Date.now();
  const promptCeiling = heldPrompt(hold);
  const sheets = route.models.map((m) => m.pricing.at(at));
  refuseUnpriced(sheets, hold);
  const { feesNano, ...price } = holdRates(sheets, {
    promptTokens: promptCeiling,
    images: hold.images ?? 0,
    webSearches: hold.webSearches ?? 0,
    serviceTier: hold.serviceTier,
  });
  return deps.wallet.reserve({
    ...request,
    at,
    price,
    feesNano,
    promptTokens: hold.promptTokens,
    promptCeiling,
    requestedMaxTokens: hold.requestedMaxTokens,
    choices: hold.choices,
    modelMaxTokens: hold.modelMaxTokens,
    contextLength: hold.contextLength,
  });
}
