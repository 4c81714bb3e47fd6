/**
 * A request's usage kind by kind, read from what the provider reported in its own shape: OpenAI's chat usage
 * (which the Anthropic and Gemini adapters also write, keeping their own fields), Anthropic's Messages usage, and
 * the Responses API's answer.
 */
import { isObject } from '../wire/guards.js';

export interface TokenUsage {
  /** Prompt tokens at the plain input price (neither read from nor written to a cache). */
  input: number;
  cacheRead: number;
  /** Written to a cache kept 5 minutes (or the provider's only cache). */
  cacheWrite: number;
  cacheWrite1h: number;
  /** Completion tokens at the output price (reasoning apart). */
  output: number;
  reasoning: number;
  /** Input images, where the model has a per-image fee. */
  images: number;
  /** Server-side web search calls. */
  webSearch: number;
  /** The service tier the provider says it served at. */
  serviceTier?: string | undefined;
}

export const promptTokensOf = (u: TokenUsage): number => u.input + u.cacheRead + u.cacheWrite + u.cacheWrite1h;
export const completionTokensOf = (u: TokenUsage): number => u.output + u.reasoning;

/** Usage of tollgate's own count: plain input and output. */
export function countedUsage(prompt: number, completion: number): TokenUsage {
  return {
    input: prompt,
    cacheRead: 0,
    cacheWrite: 0,
    cacheWrite1h: 0,
    output: completion,
    reasoning: 0,
    images: 0,
    webSearch: 0,
  };
}

/**
 * tollgate's own count, for a total the provider left out or reported as no count: the prompt as admitted, the
 * completion as delivered.
 */
export interface OwnCount {
  prompt: number;
  completion: () => number;
}

/** A token count a provider reported: a non-negative safe integer, else undefined (tollgate counts instead). */
export function reportedCount(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

/** A detail count, 0 when absent or not a count, never above `whole`. */
const part = (value: unknown, whole: number): number => Math.min(reportedCount(value) ?? 0, whole);
const field = (value: unknown, key: string): unknown => (isObject(value) ? value[key] : undefined);
const tierName = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/**
 * OpenAI's chat (and completions) `usage`: `prompt_tokens` includes `prompt_tokens_details.cached_tokens` (or
 * DeepSeek's `prompt_cache_hit_tokens`) and, from the Anthropic adapter, `cache_creation_input_tokens`;
 * `completion_tokens` includes `completion_tokens_details.reasoning_tokens`. A total not reported is tollgate's.
 */
export function chatUsage(usage: unknown, own: OwnCount, serviceTier?: unknown): TokenUsage {
  const prompt = reportedCount(field(usage, 'prompt_tokens')) ?? own.prompt;
  const completion = reportedCount(field(usage, 'completion_tokens')) ?? own.completion();
  const details = field(usage, 'prompt_tokens_details');
  const cacheRead = part(
    field(details, 'cached_tokens') ??
      field(usage, 'cache_read_input_tokens') ??
      field(usage, 'prompt_cache_hit_tokens'),
    prompt,
  );
  const writes = part(
    field(usage, 'cache_creation_input_tokens') ?? field(details, 'cache_write_tokens'),
    prompt - cacheRead,
  );
  const cacheWrite1h = part(field(field(usage, 'cache_creation'), 'ephemeral_1h_input_tokens'), writes);
  const reasoning = part(field(field(usage, 'completion_tokens_details'), 'reasoning_tokens'), completion);
  return {
    input: prompt - cacheRead - writes,
    cacheRead,
    cacheWrite: writes - cacheWrite1h,
    cacheWrite1h,
    output: completion - reasoning,
    reasoning,
    images: 0,
    webSearch: reportedCount(field(field(usage, 'server_tool_use'), 'web_search_requests')) ?? 0,
    serviceTier: tierName(serviceTier ?? field(usage, 'service_tier')),
  };
}

/**
 * Anthropic's Messages `usage`: `input_tokens` excludes the cache reads and writes it lists apart; writes split by
 * `cache_creation` into 5-minute and 1-hour ones; thinking is inside `output_tokens`. A total not reported is
 * tollgate's (and then so is the whole prompt: the cache counts are parts of it).
 */
export function anthropicUsage(usage: unknown, own: OwnCount): TokenUsage {
  const output = reportedCount(field(usage, 'output_tokens')) ?? own.completion();
  const input = reportedCount(field(usage, 'input_tokens'));
  if (input === undefined) return countedUsage(own.prompt, output);
  const writes = reportedCount(field(usage, 'cache_creation_input_tokens')) ?? 0;
  const cacheWrite1h = part(field(field(usage, 'cache_creation'), 'ephemeral_1h_input_tokens'), writes);
  return {
    input,
    cacheRead: reportedCount(field(usage, 'cache_read_input_tokens')) ?? 0,
    cacheWrite: writes - cacheWrite1h,
    cacheWrite1h,
    output,
    reasoning: 0,
    images: 0,
    webSearch: reportedCount(field(field(usage, 'server_tool_use'), 'web_search_requests')) ?? 0,
    serviceTier: tierName(field(usage, 'service_tier')),
  };
}

/**
 * A Responses API answer's usage: `input_tokens` includes `input_tokens_details.cached_tokens`, `output_tokens`
 * includes reasoning; every `web_search_call` output item is a search; `service_tier` is the answer's. A total not
 * reported is tollgate's.
 */
export function responsesUsage(response: unknown, own: OwnCount): TokenUsage {
  const usage = field(response, 'usage');
  const prompt = reportedCount(field(usage, 'input_tokens')) ?? own.prompt;
  const completion = reportedCount(field(usage, 'output_tokens')) ?? own.completion();
  const cacheRead = part(field(field(usage, 'input_tokens_details'), 'cached_tokens'), prompt);
  const reasoning = part(field(field(usage, 'output_tokens_details'), 'reasoning_tokens'), completion);
  const output = field(response, 'output');
  const searches = Array.isArray(output)
    ? output.filter((item) => field(item, 'type') === 'web_search_call').length
    : 0;
  return {
    input: prompt - cacheRead,
    cacheRead,
    cacheWrite: 0,
    cacheWrite1h: 0,
    output: completion - reasoning,
    reasoning,
    images: 0,
    webSearch: searches,
    serviceTier: tierName(field(response, 'service_tier')),
  };
}
