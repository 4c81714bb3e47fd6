/**
 * The account's rate windows and the key's own (`requests_per_minute`, `tokens_per_minute`), combined in one
 * admission with the same limiter (memory, or Redis across replicas) under a subject of the key's own. A request
 * must fit both. The key's window is asked first (its limits are the lower ones, so it refuses more often), then
 * the account's, with the completion bound the key's window granted; what the account's window then grants less,
 * or the whole request when it refuses, goes back to the key's window, so a request refused by one window is not
 * left counted in the other. Headers show, for requests and for tokens, the window with less room (ADR 0065).
 */
import type { AccountState } from '../billing/index.js';
import type { CompletionAsk, RateDecision, RateLimits, RateWindow } from '../limits/index.js';
import type { KeyRecord } from '../storage/index.js';
import type { GatewayDeps } from './deps.js';

type RateDeps = Pick<GatewayDeps, 'limiter' | 'limitsFor'>;

/** A limit the key does not set: only the account's applies (a number, since Redis's script takes numbers). */
const UNLIMITED = Number.MAX_SAFE_INTEGER;

export interface TwoWindows {
  /** What the rate-limit headers show: for requests and for tokens, the window with less room. */
  shown: RateDecision;
  /** Set when a window refused: when to retry and, for the key's own window, which of its limits. */
  refusal?: { retryAfterSeconds: number; message?: string };
  /** The completion bound per choice both windows counted. */
  completionBound: number;
  /** The windows that counted the request (by subject), for give-backs; empty when it was refused. */
  counted: Counted[];
}

interface Counted {
  subject: string;
  decision: RateDecision;
}

/** The rate-limit subject of a key's own windows (never an account id: those start with `acct_`). */
export function keySubject(keyId: string): string {
  return `key:${keyId}`;
}

/** The key's own rate limits; undefined when it has none. */
export function keyRateLimits(key: KeyRecord): RateLimits | undefined {
  if (key.requestsPerMinute === null && key.tokensPerMinute === null) return undefined;
  return { requestsPerMinute: key.requestsPerMinute ?? UNLIMITED, tokensPerMinute: key.tokensPerMinute ?? UNLIMITED };
}

/** Counts one request, the prompt and the completion asked in the key's window and the account's, or in neither. */
export async function admitBoth(
  deps: RateDeps,
  account: AccountState,
  key: KeyRecord,
  promptTokens: number,
  completion?: CompletionAsk,
): Promise<TwoWindows> {
  const accountLimits = deps.limitsFor(account);
  const keyLimits = keyRateLimits(key);
  if (!keyLimits) {
    const decision = await deps.limiter.admit(account.id, accountLimits, promptTokens, completion);
    return {
      shown: decision,
      completionBound: decision.completionBound,
      counted: decision.allowed ? [{ subject: account.id, decision }] : [],
      ...refusalOf(decision),
    };
  }
  const subject = keySubject(key.id);
  const byKey = await deps.limiter.admit(subject, keyLimits, promptTokens, completion);
  if (!byKey.allowed) return keyRefusal(byKey, keyLimits);
  const choices = completion && completion.bound > 0 ? completion.choices : 0;
  const asked = completion ? { bound: byKey.completionBound, choices: completion.choices } : undefined;
  const byAccount = await deps.limiter.admit(account.id, accountLimits, promptTokens, asked);
  const unused = byAccount.allowed ? (byKey.completionBound - byAccount.completionBound) * choices : 0;
  if (!byAccount.allowed) giveBack(deps, subject, byKey, promptTokens + byKey.completionBound * choices, 1);
  else giveBack(deps, subject, byKey, unused, 0);
  return {
    shown: tighter(byAccount, byKey),
    completionBound: byAccount.completionBound,
    counted: byAccount.allowed
      ? [
          { subject: account.id, decision: byAccount },
          { subject, decision: byKey },
        ]
      : [],
    ...refusalOf(byAccount),
  };
}

/** Whether both windows would let one more request through now; counts nothing. */
export async function peekBoth(deps: RateDeps, account: AccountState, key: KeyRecord): Promise<TwoWindows> {
  const keyLimits = keyRateLimits(key);
  if (keyLimits) {
    const byKey = await deps.limiter.peek(keySubject(key.id), keyLimits);
    if (!byKey.allowed) return keyRefusal(byKey, keyLimits);
  }
  const decision = await deps.limiter.peek(account.id, deps.limitsFor(account));
  return { shown: decision, completionBound: 0, counted: [], ...refusalOf(decision) };
}

/** Gives `tokens` back to both windows (what an answer did not use). A decision failed open names no second. */
export function giveBackBoth(deps: RateDeps, decision: TwoWindows, tokens: number): void {
  if (tokens <= 0) return;
  for (const { subject, decision: counted } of decision.counted) giveBack(deps, subject, counted, tokens, 0);
}

function keyRefusal(byKey: RateDecision, limits: RateLimits): TwoWindows {
  return {
    shown: byKey,
    completionBound: 0,
    counted: [],
    refusal: { retryAfterSeconds: byKey.retryAfterSeconds, message: keyRefusalMessage(byKey, limits) },
  };
}

function giveBack(deps: RateDeps, subject: string, decision: RateDecision, tokens: number, requests: number): void {
  if (decision.second === undefined) return;
  if (requests > 0) void deps.limiter.giveBack(subject, decision.second, tokens, requests);
  else if (tokens > 0) void deps.limiter.giveBack(subject, decision.second, tokens);
}

function refusalOf(decision: RateDecision): Pick<TwoWindows, 'refusal'> {
  return decision.allowed ? {} : { refusal: { retryAfterSeconds: decision.retryAfterSeconds } };
}

function keyRefusalMessage(decision: RateDecision, limits: RateLimits): string {
  const which =
    decision.requests.remaining < 1
      ? `${limits.requestsPerMinute} requests per minute`
      : `${limits.tokensPerMinute} tokens per minute`;
  return `Rate limit exceeded: this API key's own limit of ${which} (requests_per_minute, tokens_per_minute of the key)`;
}

/** For requests and for tokens, the window with less room. */
function tighter(account: RateDecision, key: RateDecision): RateDecision {
  return {
    ...account,
    requests: lessRoom(account.requests, key.requests),
    tokens: lessRoom(account.tokens, key.tokens),
  };
}

function lessRoom(a: RateWindow, b: RateWindow): RateWindow {
  return b.remaining < a.remaining ? b : a;
}
