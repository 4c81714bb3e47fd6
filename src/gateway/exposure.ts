/**
 * What a request body exposes to the provider's bill beyond its own text, in any of the protocols tollgate takes
 * (chat, Messages, Responses): content the provider fetches or holds (files, documents by URL or id, fetched pages:
 * not bounded by the body, so the hold takes the model's whole context), input images (a per-image fee where the
 * model has one), server-side web searches (a per-call fee, at most the request's own bound) and the service tier
 * asked for. Hosted tools tollgate cannot price are refused here, before anything is held.
 */
import { GatewayError } from '../errors/index.js';
import { isObject } from '../wire/guards.js';
import { WEB_SEARCHES_BY_SIZE } from '../wire/index.js';

export interface Exposure {
  /** The body names content the provider adds that the body does not bound. */
  unbounded: boolean;
  images: number;
  /** The most server-side web searches the request allows. */
  webSearches: number;
  serviceTier: string | undefined;
}

const IMAGE_TYPES = new Set(['image_url', 'input_image', 'image']);
/** Parts whose content the provider fetches or reads from storage. */
const FETCHED_TYPES = new Set(['file', 'input_file', 'container_upload', 'mcp', 'url_context', 'file_search']);
/** Keys that name content held or fetched by the provider. */
const FETCHED_KEYS = ['file_id', 'file_url'];
/** Hosted tools with fees tollgate has no price for (containers, generated images, vector stores). */
const UNPRICED_TOOL = /^(code_interpreter|code_execution|image_generation|file_search|computer_use)/;
const WEB_SEARCH_TOOL = /^web_search/;
/** Hosted tools whose results come back as prompt the body does not bound. */
const FETCH_TOOL = /^web_(fetch|search)/;
/** OpenAI service tiers that are the standard price. */
const STANDARD_TIERS = new Set(['auto', 'default', 'standard_only']);

export function exposureOf(body: unknown): Exposure {
  const found = { unbounded: false, images: 0 };
  scan(body, found, 0);
  if (!isObject(body)) return { ...found, webSearches: 0, serviceTier: undefined };
  // Search results come back as prompt.
  if (isObject(body.web_search_options)) found.unbounded = true;
  return { ...found, webSearches: webSearches(body), serviceTier: serviceTierOf(body) };
}

/** Depth-first over the body's objects (strings are not read: the endpoint's own measure bounds text). */
function scan(value: unknown, found: { unbounded: boolean; images: number }, depth: number): void {
  if (depth > 64) return;
  if (Array.isArray(value)) {
    for (const item of value) scan(item, found, depth + 1);
    return;
  }
  if (!isObject(value)) return;
  const type = value.type;
  if (typeof type === 'string') {
    if (IMAGE_TYPES.has(type)) found.images++;
    if (FETCHED_TYPES.has(type) || FETCH_TOOL.test(type) || (type === 'document' && !inlineText(value.source)))
      found.unbounded = true;
  }
  if (FETCHED_KEYS.some((key) => typeof value[key] === 'string')) found.unbounded = true;
  for (const key in value) {
    const child = value[key];
    if (typeof child === 'object' && child !== null) scan(child, found, depth + 1);
  }
}

/** A document given as its own text (bounded by the body), not a file, URL or PDF the provider reads. */
function inlineText(source: unknown): boolean {
  return isObject(source) && (source.type === 'text' || source.type === 'content');
}

/** The web searches a request without its own bound is sent with (`max_uses`, `max_tool_calls`) and held for. */
export const DEFAULT_SEARCH_BOUND = 8;

/** Anthropic's server tool types are dated (`web_search_20250305`) and bound themselves with `max_uses`. */
const isAnthropicTool = (type: string): boolean => /_\d{8}$/.test(type);

/**
 * The most web searches the request allows: each web search tool's `max_uses` (Messages) or the request's
 * `max_tool_calls` (Responses), DEFAULT_SEARCH_BOUND where it names none (`withSearchBounds` sends that bound);
 * chat's `web_search_options` by its `search_context_size`. A hosted tool tollgate cannot price is refused.
 */
function webSearches(body: Record<string, unknown>): number {
  const options = body.web_search_options;
  const size =
    isObject(options) && typeof options.search_context_size === 'string' ? options.search_context_size : 'medium';
  let searches = isObject(options) ? (WEB_SEARCHES_BY_SIZE[size] ?? 1) : 0;
  if (!Array.isArray(body.tools)) return searches;
  body.tools.forEach((tool: unknown, index) => {
    const type = isObject(tool) && typeof tool.type === 'string' ? tool.type : '';
    if (UNPRICED_TOOL.test(type))
      throw new GatewayError('invalid_request', {
        message: `The hosted tool '${type}' has fees tollgate cannot price; it is not available through this gateway`,
        param: `tools[${index}].type`,
      });
    if (!WEB_SEARCH_TOOL.test(type) || !isObject(tool)) return;
    const bound = isAnthropicTool(type) ? tool.max_uses : body.max_tool_calls;
    searches += typeof bound === 'number' && Number.isSafeInteger(bound) && bound >= 1 ? bound : DEFAULT_SEARCH_BOUND;
  });
  return searches;
}

/**
 * A native body with every web search bounded as it was held: Anthropic's tools without `max_uses` get
 * DEFAULT_SEARCH_BOUND, a Responses request with a web search tool and no `max_tool_calls` gets it too.
 */
export function withSearchBounds<B extends { tools?: unknown; max_tool_calls?: unknown }>(body: B): B {
  if (!Array.isArray(body.tools)) return body;
  let openAiSearch = false;
  const tools: unknown[] = body.tools.map((tool: unknown) => {
    if (!isObject(tool) || typeof tool.type !== 'string' || !WEB_SEARCH_TOOL.test(tool.type)) return tool;
    if (!isAnthropicTool(tool.type)) {
      openAiSearch = true;
      return tool;
    }
    return typeof tool.max_uses === 'number' ? tool : { ...tool, max_uses: DEFAULT_SEARCH_BOUND };
  });
  const bound = openAiSearch && typeof body.max_tool_calls !== 'number';
  return { ...body, tools, ...(bound ? { max_tool_calls: DEFAULT_SEARCH_BOUND } : {}) };
}

/** A service tier other than the standard one: OpenAI's `service_tier`, Anthropic's `speed: "fast"`. */
function serviceTierOf(body: Record<string, unknown>): string | undefined {
  if (body.speed === 'fast') return 'fast';
  const tier = body.service_tier;
  return typeof tier === 'string' && !STANDARD_TIERS.has(tier) ? tier : undefined;
}
