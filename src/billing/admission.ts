/**
 * Admission in a pure function: given the prompt, the requested completion bound and what each budget can
 * still pay, decide the completion bound to send upstream and the worst-case cost to hold.
 */
import { GatewayError } from '../errors/index.js';
import type { Nano } from '../money/index.js';
import { keyLimitExceeded, type KeyLimitTerms } from './key-spend.js';
import { affordableCompletionTokens, costOf, type Price } from './pricing.js';

/** Shown when a refund or a dispute took back more than the balance had: no live request runs until it is repaid. */
export const NEGATIVE_BALANCE =
  'The balance is below zero because a payment was refunded or disputed. Add credits to continue.';

export interface AdmissionInput {
  /** The dearest rates that can apply to this request, per prompt and per completion token. */
  price: Price;
  /** Per-request and per-call fees the request may incur at most. */
  feesNano: Nano;
  /** tollgate's count of the prompt: what the context length is checked against. */
  promptTokens: number;
  /** The most prompt tokens the provider may bill (stored context, URLs and files included): what is held. */
  promptCeiling: number;
  /** max_tokens / max_completion_tokens of the request, if any; 0 when nothing is generated (embeddings). */
  requestedMaxTokens: number | undefined;
  /** `n`: every choice may use the whole completion bound. */
  choices: number;
  /** The most completion tokens per choice the tokens-per-minute window counted (it may have had less room). */
  rateBound?: number | undefined;
  modelMaxTokens: number;
  contextLength: number;
  /** What the account's balance can still pay (balance minus holds and unconfirmed debits). */
  balanceAvailable: Nano;
  /** Left under the daily limit; null when there is none. */
  dailyRemaining: Nano | null;
  /** Left under the key's spend limit in its current period; null when there is none. */
  keyRemaining: Nano | null;
  /** The key's limit, for the refusal's words; required when `keyRemaining` is set. */
  keyLimit?: KeyLimitTerms | undefined;
  /** Test keys move no money. */
  free: boolean;
}

export interface Admission {
  maxTokens: number;
  /** True when maxTokens is lower than the request (or the model default) because of a budget or the token window. */
  lowered: boolean;
  holdNano: Nano;
}

export function admit(input: AdmissionInput): Admission {
  const { promptTokens, requestedMaxTokens, modelMaxTokens, contextLength, price, feesNano } = input;
  const held = Math.min(Math.max(input.promptCeiling, promptTokens), contextLength);
  if (requestedMaxTokens !== undefined && requestedMaxTokens > modelMaxTokens) {
    throw new GatewayError('invalid_request', {
      message: `max_tokens is too large: ${requestedMaxTokens}. This model supports at most ${modelMaxTokens} completion tokens.`,
      param: 'max_tokens',
    });
  }
  const room = contextLength - promptTokens;
  if (room < 1 || (requestedMaxTokens !== undefined && requestedMaxTokens > room)) {
    throw new GatewayError('context_length_exceeded', {
      message:
        `This model's maximum context length is ${contextLength} tokens. However, you requested ` +
        `${promptTokens + (requestedMaxTokens ?? 0)} tokens (${promptTokens} in the messages, ` +
        `${requestedMaxTokens ?? 0} in the completion). Please reduce the length of the messages or completion.`,
      param: 'messages',
    });
  }
  const worst = completionBound(input);
  let cap = input.rateBound !== undefined && worst > 0 ? Math.min(worst, input.rateBound) : worst;
  if (input.free) return { maxTokens: cap, lowered: cap < worst, holdNano: 0n };
  if (input.balanceAvailable < 0n) throw new GatewayError('insufficient_credits', { message: NEGATIVE_BALANCE });

  const budgets: Array<[Nano | null, () => GatewayError]> = [
    [input.balanceAvailable, () => new GatewayError('insufficient_credits')],
    [input.dailyRemaining, () => new GatewayError('daily_limit_exceeded', { retryAfter: secondsUntilUtcMidnight() })],
    [
      input.keyRemaining,
      () => keyLimitExceeded(input.keyLimit ?? { limitNano: input.keyRemaining ?? 0n, reset: null }),
    ],
  ];
  for (const [budget, error] of budgets) {
    if (budget === null) continue;
    // No completion (embeddings): the input's price is the whole cost.
    if (worst === 0) {
      if (costOf(price, held, 0) + feesNano > budget) throw error();
      continue;
    }
    const tokens = Math.floor(affordableCompletionTokens(price, held, budget - feesNano) / input.choices);
    if (tokens < 1) throw error();
    cap = Math.min(cap, tokens);
  }
  return { maxTokens: cap, lowered: cap < worst, holdNano: costOf(price, held, cap * input.choices) + feesNano };
}

/** The completion bound sent upstream before any budget lowers it: the request's, or what the context leaves. */
export function completionBound(
  input: Pick<AdmissionInput, 'promptTokens' | 'requestedMaxTokens' | 'modelMaxTokens' | 'contextLength'>,
): number {
  const room = Math.max(0, input.contextLength - input.promptTokens);
  return input.requestedMaxTokens ?? Math.min(input.modelMaxTokens, room);
}

export function secondsUntilUtcMidnight(now = Date.now()): number {
  const midnight = new Date(now);
  midnight.setUTCHours(24, 0, 0, 0);
  return Math.max(1, Math.ceil((midnight.getTime() - now) / 1000));
}
