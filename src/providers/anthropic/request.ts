/**
 * OpenAI chat request -> Anthropic Messages request (https://docs.anthropic.com/en/api/messages), with the
 * extensions hosted gateways (OpenRouter, LiteLLM) accept for Claude: `cache_control` on content parts, messages
 * and tools (prompt caching), `reasoning_effort` or Anthropic's own `thinking` (extended thinking), and
 * `web_search_options` (Anthropic's web search server tool).
 */
import { isObject, WEB_SEARCHES_BY_SIZE } from '../../wire/index.js';
import { isImagePart, parseDataUrl, textOf, unsupported } from '../translate.js';
import type { ChatMessage, ChatRequest, ContentPart, ToolChoice } from '../types.js';

/** The tool a JSON-mode request is forced to call; its input is the answer (Anthropic has no `response_format`). */
export const JSON_TOOL = 'json_response';

type Block = Record<string, unknown>;
interface Message {
  role: 'user' | 'assistant';
  content: Block[];
}

export interface Translated {
  body: Record<string, unknown>;
  /** The answer arrives in the input of JSON_TOOL and is handed back stringified. */
  jsonTool: boolean;
}

/** Anthropic requires max_tokens; without one in the request, the model's own limit (or this) is sent. */
const FALLBACK_MAX_TOKENS = 4_096;

export function toAnthropicRequest(
  provider: string,
  request: ChatRequest,
  stream: boolean,
  defaultMaxTokens?: number,
): Translated {
  if ((request.n ?? 1) > 1) throw unsupported(provider, `${provider} cannot return more than one choice (n > 1)`, 'n');
  const system: Block[] = [];
  const messages: Message[] = [];
  const push = (role: Message['role'], content: Block[]) => {
    if (content.length === 0) return;
    const last = messages[messages.length - 1];
    // Anthropic wants alternating turns: consecutive messages of one role (tool results, say) become one.
    if (last?.role === role) last.content.push(...content);
    else messages.push({ role, content });
  };
  request.messages.forEach((message, index) => {
    switch (message.role) {
      case 'system':
      case 'developer':
        return void system.push(...cachedLast(provider, message, index, textBlocks(provider, message, index)));
      case 'assistant':
        return push('assistant', cachedLast(provider, message, index, assistantBlocks(provider, message, index)));
      case 'tool':
        return push('user', cachedLast(provider, message, index, [toolResult(provider, message, index)]));
      default:
        return push('user', cachedLast(provider, message, index, userBlocks(provider, message, index)));
    }
  });

  const maxTokens = request.max_completion_tokens ?? request.max_tokens ?? defaultMaxTokens ?? FALLBACK_MAX_TOKENS;
  const body: Record<string, unknown> = { model: request.model, max_tokens: maxTokens, messages };
  if (stream) body.stream = true;
  if (request.stop != null) body.stop_sequences = typeof request.stop === 'string' ? [request.stop] : request.stop;
  if (request.user) body.metadata = { user_id: request.user };

  let jsonTool = false;
  const tools: Block[] = (request.tools ?? []).map((tool, index) =>
    withCache(
      {
        name: tool.function.name,
        ...(tool.function.description ? { description: tool.function.description } : {}),
        input_schema: tool.function.parameters ?? { type: 'object', properties: {} },
      },
      cacheControlOf(provider, tool, `tools[${index}]`),
    ),
  );
  const search = webSearchTool(provider, request.web_search_options);
  if (search) tools.push(search);
  let toolChoice = request.tools?.length ? anthropicToolChoice(request.tool_choice) : undefined;
  const format = request.response_format;
  if (format && format.type !== 'text') {
    if (tools.length === 0) {
      const schema = format.json_schema?.schema;
      tools.push({
        name: JSON_TOOL,
        description: 'Give the answer as this JSON object.',
        input_schema: schema ?? { type: 'object' },
      });
      toolChoice = { type: 'tool', name: JSON_TOOL };
      jsonTool = true;
    } else {
      system.push({
        type: 'text',
        text: 'When you answer without calling a tool, answer with one JSON object and nothing else.',
      });
    }
  }
  if (tools.length) body.tools = tools;
  // Anthropic refuses thinking with a tool the model must call (`tool_choice` any or tool; JSON mode is one): the
  // thinking Anthropic's own field asks for is the client's 400; `reasoning_effort`, which clients send to any
  // model, is left out.
  const forced = toolChoice?.type === 'any' || toolChoice?.type === 'tool';
  const asked = thinkingOf(provider, request, maxTokens);
  const thinking = (forced && request.thinking == null) || continuesTurn(messages) ? undefined : asked;
  if (thinking && forced)
    throw unsupported(
      provider,
      jsonTool
        ? `${provider} cannot think before a JSON-mode answer (it answers JSON through a forced tool call)`
        : `${provider} cannot think when tool_choice forces a tool call`,
      jsonTool ? 'response_format' : 'tool_choice',
    );
  if (thinking) body.thinking = thinking;
  Object.assign(body, sampling(request.temperature, request.top_p, thinking !== undefined));
  if (toolChoice) {
    if (request.parallel_tool_calls === false && toolChoice.type !== 'none')
      toolChoice.disable_parallel_tool_use = true;
    body.tool_choice = toolChoice;
  }
  if (system.length) body.system = system;
  return { body, jsonTool };
}

/**
 * OpenAI's temperature runs to 2, Anthropic's to 1. Claude models since Opus 4.1 reject `temperature` and `top_p`
 * together (400 "cannot both be specified"), so one is sent: `top_p` when it narrows sampling and the temperature
 * is at its ceiling (clients often send `temperature: 1` by default), the temperature otherwise. With thinking,
 * Anthropic takes no temperature and a `top_p` of 0.95 to 1 only: those are left out.
 */
function sampling(temperature: number | null | undefined, topP: number | null | undefined, thinking: boolean): Block {
  if (thinking) return topP != null && topP >= 0.95 && topP < 1 ? { top_p: topP } : {};
  const t = temperature == null ? undefined : Math.min(temperature, 1);
  if (t === undefined) return topP == null ? {} : { top_p: topP };
  if (topP == null || topP >= 1) return { temperature: t };
  return t >= 1 ? { top_p: topP } : { temperature: t };
}

function anthropicToolChoice(choice: ToolChoice | undefined): Block | undefined {
  if (choice === undefined || choice === 'auto') return { type: 'auto' };
  if (choice === 'required') return { type: 'any' };
  if (choice === 'none') return { type: 'none' };
  return { type: 'tool', name: choice.function.name };
}

function assistantBlocks(provider: string, message: ChatMessage, index: number): Block[] {
  const blocks = textBlocks(provider, message, index);
  for (const call of message.tool_calls ?? []) {
    let input: unknown;
    try {
      input = JSON.parse(call.function.arguments || '{}');
    } catch {
      input = {};
    }
    blocks.push({ type: 'tool_use', id: call.id, name: call.function.name, input });
  }
  return blocks;
}

/**
 * The text of a system, developer or assistant message: one text block, its parts joined, unless a part carries
 * `cache_control` (a cache breakpoint must end a block of its own): then one block per text part.
 */
function textBlocks(provider: string, message: ChatMessage, index: number): Block[] {
  const { content } = message;
  if (!Array.isArray(content) || !content.some(marksCache)) {
    const text = textOf(content);
    return text ? [{ type: 'text', text }] : [];
  }
  const blocks: Block[] = [];
  content.forEach((part, partIndex) => {
    if (part.type !== 'text' || typeof part.text !== 'string' || !part.text) return;
    const param = `messages[${index}].content[${partIndex}]`;
    blocks.push(withCache({ type: 'text', text: part.text }, cacheControlOf(provider, part, param)));
  });
  return blocks;
}

/** A tool message: its tool_result, whose content keeps its text parts apart when one is a cache breakpoint. */
function toolResult(provider: string, message: ChatMessage, index: number): Block {
  const block: Block = { type: 'tool_result', tool_use_id: message.tool_call_id ?? '' };
  const { content } = message;
  const parts = Array.isArray(content) && content.some(marksCache);
  block.content = parts ? textBlocks(provider, message, index) : textOf(content);
  return block;
}

function userBlocks(provider: string, message: ChatMessage, index: number): Block[] {
  const { content } = message;
  if (typeof content === 'string') return content ? [{ type: 'text', text: content }] : [];
  return (content ?? []).map((part, partIndex) => {
    const param = `messages[${index}].content[${partIndex}]`;
    return withCache(userPart(provider, part, param), cacheControlOf(provider, part, param));
  });
}

function userPart(provider: string, part: ContentPart, param: string): Block {
  if (part.type === 'text') return { type: 'text', text: String(part.text) };
  if (isImagePart(part)) {
    const url = String(part.image_url.url);
    const inline = parseDataUrl(url);
    if (inline) return { type: 'image', source: { type: 'base64', media_type: inline.mediaType, data: inline.data } };
    if (/^https?:\/\//i.test(url)) return { type: 'image', source: { type: 'url', url } };
    throw unsupported(provider, `${provider} takes images from http(s) URLs or base64 data URLs`, param);
  }
  throw unsupported(provider, `${provider} does not accept content parts of type '${part.type}'`, param);
}

/** Anthropic's cache breakpoint: the prompt up to and including its block is cached, 5 minutes (default) or 1 hour. */
interface CacheControl {
  type: 'ephemeral';
  ttl?: '5m' | '1h';
}

/** The `cache_control` a part, message or tool carries (as OpenRouter and LiteLLM take it for Claude), checked. */
function cacheControlOf(provider: string, holder: unknown, param: string): CacheControl | undefined {
  if (!isObject(holder) || holder.cache_control == null) return undefined;
  const control = holder.cache_control;
  const ttl = isObject(control) ? control.ttl : undefined;
  if (!isObject(control) || control.type !== 'ephemeral' || (ttl != null && ttl !== '5m' && ttl !== '1h'))
    throw unsupported(
      provider,
      `${provider} takes cache_control {"type": "ephemeral"}, with an optional ttl of "5m" or "1h"`,
      `${param}.cache_control`,
    );
  return ttl === '5m' || ttl === '1h' ? { type: 'ephemeral', ttl } : { type: 'ephemeral' };
}

/** Whether a part (or message, or tool) carries a `cache_control`. */
const marksCache = (holder: unknown): boolean => isObject(holder) && holder.cache_control != null;

const withCache = (block: Block, control: CacheControl | undefined): Block =>
  control ? { ...block, cache_control: control } : block;

/** A message's own `cache_control` (LiteLLM's form) marks the last block it became. */
function cachedLast(provider: string, message: ChatMessage, index: number, blocks: Block[]): Block[] {
  const control = cacheControlOf(provider, message, `messages[${index}]`);
  if (!control || blocks.length === 0) return blocks;
  return [...blocks.slice(0, -1), withCache(blocks[blocks.length - 1]!, control)];
}

/** Anthropic's smallest thinking budget; a completion bound at or below it leaves no room for thinking. */
const MIN_THINKING_BUDGET = 1_024;
/** The largest budget an effort asks for (as OpenRouter's mapping). */
const MAX_EFFORT_BUDGET = 32_000;
/** The share of the completion bound each `reasoning_effort` gives to thinking. */
const EFFORT_SHARE: Readonly<Record<string, number>> = { minimal: 0.1, low: 0.2, medium: 0.5, high: 0.8, xhigh: 0.95 };

type Thinking = { type: 'enabled'; budget_tokens: number } | { type: 'adaptive' };

/**
 * Extended thinking from Anthropic's own `thinking` field, else from `reasoning_effort` (a share of `max_tokens`).
 * Anthropic wants the budget at least 1,024 and below `max_tokens`: a budget above is lowered to fit, and thinking
 * is left off when the bound leaves no room for 1,024 tokens of it (as a lowered bound does on /v1/messages).
 */
function thinkingOf(provider: string, request: ChatRequest, maxTokens: number): Thinking | undefined {
  const { thinking } = request;
  if (thinking != null) {
    if (isObject(thinking) && thinking.type === 'disabled') return undefined;
    if (isObject(thinking) && thinking.type === 'adaptive') return { type: 'adaptive' };
    const budget = isObject(thinking) ? thinking.budget_tokens : undefined;
    if (!isObject(thinking) || thinking.type !== 'enabled' || !Number.isSafeInteger(budget) || Number(budget) < 1)
      throw unsupported(
        provider,
        'thinking must be {"type": "enabled", "budget_tokens": <tokens>}, {"type": "adaptive"} or {"type": "disabled"}',
        'thinking',
      );
    return fitBudget(Number(budget), maxTokens);
  }
  const effort = request.reasoning_effort;
  if (effort == null || effort === 'none') return undefined;
  const share = typeof effort === 'string' ? EFFORT_SHARE[effort] : undefined;
  if (share === undefined)
    throw unsupported(
      provider,
      `reasoning_effort must be one of none, ${Object.keys(EFFORT_SHARE).join(', ')}`,
      'reasoning_effort',
    );
  return fitBudget(Math.min(MAX_EFFORT_BUDGET, Math.floor(maxTokens * share)), maxTokens);
}

/**
 * Whether the request continues an assistant turn: a tool result answering its tool calls, or a prefill. With
 * thinking on, Anthropic wants that turn to start with its thinking block (and signature), which chat messages do
 * not carry: such a request goes without thinking (the turn's first request thought).
 */
function continuesTurn(messages: Message[]): boolean {
  const last = messages[messages.length - 1];
  return last?.role === 'assistant' || (last?.content.some((block) => block.type === 'tool_result') ?? false);
}

function fitBudget(budget: number, maxTokens: number): Thinking | undefined {
  const fitted = Math.min(Math.max(budget, MIN_THINKING_BUDGET), maxTokens - 1);
  return fitted >= MIN_THINKING_BUDGET ? { type: 'enabled', budget_tokens: fitted } : undefined;
}

/**
 * OpenAI's `web_search_options` as Anthropic's web search server tool: `search_context_size` bounds the searches
 * (`max_uses`), `user_location.approximate` becomes the tool's `user_location`.
 */
function webSearchTool(provider: string, options: unknown): Block | undefined {
  if (options == null) return undefined;
  const size = isObject(options) ? (options.search_context_size ?? 'medium') : undefined;
  const maxUses = typeof size === 'string' ? WEB_SEARCHES_BY_SIZE[size] : undefined;
  if (!isObject(options) || maxUses === undefined)
    throw unsupported(
      provider,
      'web_search_options.search_context_size must be low, medium or high',
      'web_search_options.search_context_size',
    );
  const tool: Block = { type: 'web_search_20250305', name: 'web_search', max_uses: maxUses };
  const location = isObject(options.user_location) ? options.user_location.approximate : undefined;
  if (isObject(location)) {
    const fields = ['city', 'region', 'country', 'timezone'].filter((key) => typeof location[key] === 'string');
    if (fields.length)
      tool.user_location = { type: 'approximate', ...Object.fromEntries(fields.map((key) => [key, location[key]])) };
  }
  return tool;
}
