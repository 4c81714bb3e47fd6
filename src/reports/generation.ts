/**
 * A request's charge explained (GET /v1/generation, `tollgate generation`, the dashboard's request detail): its
 * ledger row with the tokens per kind, the prices applied, and where the request went and how it ended.
 */
import { usdNumber, usdString, type StoredDetail } from '../billing/index.js';
import type { LedgerRecord } from '../storage/index.js';
import { storedJson } from '../storage/index.js';

/** `ledger.billing` as `billingRecord` (pricing/cost.ts) writes it; older rows lack the fees. */
interface StoredBilling {
  tokens: Record<string, number>;
  prices_nano_per_1k: Record<string, string>;
  fees_nano?: Record<string, string>;
  tier_above_prompt_tokens?: number;
  service_tier?: string;
  cost_nano: string;
}

/** Token kinds as billed, each with the rate it is priced at (`prices_nano_per_1k`). */
const TOKEN_LINES = [
  { kind: 'input', tokens: 'input', rate: 'prompt' },
  { kind: 'cached_input', tokens: 'input_cache_read', rate: 'input_cache_read' },
  { kind: 'cache_write', tokens: 'input_cache_write', rate: 'input_cache_write' },
  { kind: 'cache_write_1h', tokens: 'input_cache_write_1h', rate: 'input_cache_write_1h' },
  { kind: 'output', tokens: 'output', rate: 'completion' },
  { kind: 'reasoning', tokens: 'internal_reasoning', rate: 'internal_reasoning' },
] as const;

const FEE_LINES = [
  { kind: 'request', count: undefined, fee: 'request' },
  { kind: 'images', count: 'images', fee: 'image' },
  { kind: 'web_searches', count: 'web_search', fee: 'web_search' },
] as const;

export function renderGeneration(record: LedgerRecord, keyName: string | null): Record<string, unknown> {
  const billing = record.billing ? storedJson<StoredBilling>(record.billing) : undefined;
  const detail = record.detail ? storedJson<StoredDetail>(record.detail) : undefined;
  const chargedNano = -record.amountNano;
  return {
    object: 'generation',
    id: record.requestId,
    answer_id: record.answerId,
    created: Math.floor(record.createdAt / 1000),
    model: record.model,
    provider: detail?.provider ?? null,
    endpoint: record.endpoint,
    key: { id: record.keyId, name: keyName },
    streamed: detail?.streamed ?? null,
    cancelled: detail?.cancelled ?? null,
    finish_reason: detail?.finish_reason ?? null,
    latency_ms: detail?.latency_ms ?? null,
    time_to_first_token_ms: detail?.first_token_ms ?? null,
    tokens: tokensOf(record, billing),
    cost: usdNumber(chargedNano),
    cost_nano: String(chargedNano),
    breakdown: billing ? breakdownOf(billing, chargedNano) : null,
    ledger_entry: { id: record.id, balance_after: usdNumber(record.balanceAfterNano) },
  };
}

function tokensOf(record: LedgerRecord, billing: StoredBilling | undefined) {
  const prompt = record.promptTokens ?? 0;
  const completion = record.completionTokens ?? 0;
  const t = billing?.tokens ?? {};
  return {
    prompt,
    completion,
    total: prompt + completion,
    input: t.input ?? null,
    cached_input: t.input_cache_read ?? null,
    cache_write: t.input_cache_write ?? null,
    cache_write_1h: t.input_cache_write_1h ?? null,
    reasoning: t.internal_reasoning ?? null,
    output: t.output ?? null,
    images: t.images ?? null,
    web_searches: t.web_search ?? null,
  };
}

/**
 * Each kind's quantity, price and exact cost (token lines in USD to 1e-12: a rate is nano-USD per 1,000 tokens);
 * `priced_nano` is their sum rounded up to the nano-USD once, and `charged_nano` what the ledger took, which is less
 * only when the hold or a limit capped the charge.
 */
function breakdownOf(billing: StoredBilling, chargedNano: bigint) {
  const lines: Array<Record<string, unknown>> = [];
  for (const line of TOKEN_LINES) {
    const quantity = billing.tokens[line.tokens] ?? 0;
    const rate = BigInt(billing.prices_nano_per_1k[line.rate] ?? '0');
    if (quantity === 0) continue;
    lines.push({
      kind: line.kind,
      quantity,
      unit: 'token',
      price_per_million: usdNumber(rate * 1000n),
      cost: picoUsdString(BigInt(quantity) * rate),
    });
  }
  for (const line of FEE_LINES) {
    const fee = BigInt(billing.fees_nano?.[line.fee] ?? '0');
    const quantity = line.count === undefined ? 1 : (billing.tokens[line.count] ?? 0);
    if (fee === 0n || quantity === 0) continue;
    lines.push({
      kind: line.kind,
      quantity,
      unit: line.count === undefined ? 'request' : 'unit',
      price: usdNumber(fee),
      cost: usdString(fee * BigInt(quantity)),
    });
  }
  return {
    lines,
    tier_above_prompt_tokens: billing.tier_above_prompt_tokens ?? null,
    service_tier: billing.service_tier ?? null,
    priced_nano: billing.cost_nano,
    charged_nano: String(chargedNano),
  };
}

/** A non-negative amount in pico-USD (1e-12) as an exact decimal USD string. */
export function picoUsdString(pico: bigint): string {
  const whole = pico / 1_000_000_000_000n;
  const fraction = (pico % 1_000_000_000_000n).toString().padStart(12, '0').replace(/0+$/, '');
  return fraction ? `${whole}.${fraction}` : `${whole}`;
}
