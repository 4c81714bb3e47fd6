/**
 * OpenAI's Responses API (`POST /v1/responses`) for the mock OpenAI server, in the format openai-node's types
 * document (src/resources/responses/responses.ts): a Response object, or its typed SSE events (`event: <type>`,
 * each with `sequence_number`) ending with `response.completed`. Stored responses can be continued with
 * `previous_response_id`; an unknown one is OpenAI's 404.
 *
 * Usage, billed as OpenAI bills it:
 * - input tokens: a quarter of the JSON length of `[instructions, input]`; with `previous_response_id`, plus the
 *   stored response's input and output tokens (the whole conversation is input again); plus FILE_TOKENS for every
 *   `input_file` and IMAGE_TOKENS for every `input_image` the provider fetches (by URL or `file_id`); plus
 *   SEARCH_CONTENT_TOKENS for every web search made;
 * - `input_tokens_details.cached_tokens`, with prompt caching switched on: the repeated part (the continued
 *   conversation, or a prefix an earlier request sent) when it is 1,024 tokens or more, in 128-token increments;
 * - output tokens: one per word (or per tool call argument word), plus `output_tokens_details.reasoning_tokens`
 *   (REASONING_TOKENS by `reasoning.effort`) when `reasoning` is set, within `max_output_tokens`;
 * - a `web_search` tool makes min(`max_tool_calls`, the behaviour's `searches`, 2 by default) `web_search_call`
 *   output items; `service_tier` is echoed (`auto` as `default`).
 */
import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

export interface ResponsesBehavior {
  kind: string;
  content?: string;
  chunks?: number;
  delayMs?: number;
  usage?: boolean;
  toolCalls?: Array<{ name: string; arguments: string; id?: string }>;
  afterChunks?: number;
  status?: number;
  message?: string;
  /** Web searches a `web_search` tool makes (at most `max_tool_calls`); 2 by default. */
  searches?: number;
}

/** Tokens of a file the provider reads (an `input_file` by URL or `file_id`): a 40-page PDF, about. */
export const FILE_TOKENS = 60_000;
/** Tokens of an image the provider fetches (`input_image` by URL or `file_id`): OpenAI's high-detail 512x512 count. */
export const IMAGE_TOKENS = 765;
/** Input tokens each web search adds (the search results the model reads). */
export const SEARCH_CONTENT_TOKENS = 1_500;
/** Reasoning tokens by effort (`reasoning_effort` on chat, `reasoning.effort` on Responses). */
export const REASONING_TOKENS: Readonly<Record<string, number>> = {
  none: 0,
  minimal: 16,
  low: 128,
  medium: 512,
  high: 2_048,
};
/** OpenAI's prompt caching: no hit below 1,024 tokens; hits in increments of 128 tokens. */
export const CACHE_MIN_TOKENS = 1_024;
export const CACHE_INCREMENT = 128;

/** The tokens OpenAI reports cached for a repeated prefix of `repeated` tokens. */
export function cachedTokensOf(repeated: number): number {
  return repeated < CACHE_MIN_TOKENS ? 0 : Math.floor(repeated / CACHE_INCREMENT) * CACHE_INCREMENT;
}

/** Reasoning tokens of an effort, within what `bound` leaves after the visible output. */
export function reasoningTokensOf(effort: unknown, bound: unknown, visible: number): number {
  const wanted = REASONING_TOKENS[typeof effort === 'string' ? effort : 'medium'] ?? REASONING_TOKENS.medium!;
  return typeof bound === 'number' ? Math.max(0, Math.min(wanted, bound - visible)) : wanted;
}

/**
 * The prompts a mock has seen, for prompt caching: a prompt's tokens are the mock's (four characters of its text
 * each), and the longest prefix it shares with an earlier prompt is what a cache may hold.
 */
export class PromptCache {
  private readonly prompts: string[] = [];

  /** The cached tokens of `text` (by its longest common prefix with an earlier prompt); then `text` is remembered. */
  hit(text: string): number {
    let common = 0;
    for (const seen of this.prompts) common = Math.max(common, commonPrefix(seen, text));
    this.prompts.push(text);
    if (this.prompts.length > 1_000) this.prompts.shift();
    return cachedTokensOf(Math.floor(common / 4));
  }
}

function commonPrefix(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

/** A stored response: the tokens it carries into a response that continues it. */
export interface StoredResponse {
  input: number;
  output: number;
}

export interface ResponsesState {
  stored: Map<string, StoredResponse>;
  /** Prompt caching, when switched on. */
  cache?: PromptCache | undefined;
}

/** What the mock records of a request: the usage it reported (or would have), and the output sent so far. */
export interface UsageRecord {
  usage?: any;
  outputSent?: number;
  webSearches?: number;
  eventsSent: number;
}

let counter = 0;

const isFetched = (part: any, type: string) =>
  part?.type === type &&
  (typeof part.file_id === 'string' ||
    typeof part.file_url === 'string' ||
    (typeof part.image_url === 'string' && /^https?:/i.test(part.image_url)));

/** Tokens of the files and images in `input` that the provider fetches (by URL or `file_id`). */
function fetchedTokens(input: unknown): number {
  if (!Array.isArray(input)) return 0;
  let tokens = 0;
  for (const item of input) {
    const parts = Array.isArray(item?.content) ? item.content : [];
    for (const part of parts) {
      if (isFetched(part, 'input_file')) tokens += FILE_TOKENS;
      if (isFetched(part, 'input_image')) tokens += IMAGE_TOKENS;
    }
  }
  return tokens;
}

/** The web searches a request makes: with a `web_search` tool, the behaviour's count within `max_tool_calls`. */
function searchesOf(request: any, behavior: ResponsesBehavior): number {
  const tools: any[] = Array.isArray(request.tools) ? request.tools : [];
  if (!tools.some((tool) => typeof tool?.type === 'string' && tool.type.startsWith('web_search'))) return 0;
  const wanted = behavior.searches ?? 2;
  return typeof request.max_tool_calls === 'number' ? Math.min(wanted, request.max_tool_calls) : wanted;
}

export async function serveResponses(
  behavior: ResponsesBehavior,
  request: any,
  res: ServerResponse,
  state: ResponsesState,
  sendError: (
    res: ServerResponse,
    e: { status: number; message?: string; param?: string | null; code?: string },
  ) => void,
  record?: UsageRecord,
): Promise<void> {
  if (typeof request?.model !== 'string' || request.input === undefined)
    return sendError(res, { status: 400, message: "Missing required parameter: 'input'.", param: 'input' });
  const previous = request.previous_response_id ? state.stored.get(request.previous_response_id) : undefined;
  if (request.previous_response_id && !previous)
    return sendError(res, {
      status: 404,
      message: `Previous response with id '${request.previous_response_id}' not found.`,
      param: 'previous_response_id',
      code: 'previous_response_not_found',
    });
  if (behavior.kind === 'hang') return;
  if (behavior.kind === 'error') return sendError(res, { status: behavior.status ?? 500, message: behavior.message });
  const id = `resp_mock${++counter}`;
  const text = behavior.content ?? 'Hello from the mock upstream.';
  const words = behavior.toolCalls
    ? behavior.toolCalls.map((call) => call.arguments)
    : (text.match(/\s*\S+/g) ?? [text]);
  const ownText = JSON.stringify([request.instructions ?? '', request.input]);
  const carried = previous ? previous.input + previous.output : 0;
  const searches = searchesOf(request, behavior);
  const inputTokens =
    carried + Math.ceil(ownText.length / 4) + fetchedTokens(request.input) + searches * SEARCH_CONTENT_TOKENS;
  // The continued conversation is the prompt's prefix; otherwise a prefix an earlier request sent.
  const cached = state.cache ? (previous ? cachedTokensOf(carried) : state.cache.hit(ownText)) : 0;
  const visible = behavior.toolCalls
    ? behavior.toolCalls.reduce((sum, call) => sum + call.arguments.split(/\s+/).length, 0)
    : words.length;
  const reasoning = request.reasoning
    ? reasoningTokensOf(request.reasoning.effort, request.max_output_tokens, visible)
    : 0;
  const outputTokens = visible + reasoning;
  if (request.store !== false) state.stored.set(id, { input: inputTokens, output: outputTokens });
  const usage = {
    input_tokens: inputTokens,
    input_tokens_details: { cached_tokens: cached, cache_write_tokens: 0 },
    output_tokens: outputTokens,
    output_tokens_details: { reasoning_tokens: reasoning },
    total_tokens: inputTokens + outputTokens,
  };
  if (record) {
    record.usage = usage;
    record.outputSent = 0;
    record.webSearches = searches;
  }
  const tier =
    typeof request.service_tier === 'string'
      ? { service_tier: request.service_tier === 'auto' ? 'default' : request.service_tier }
      : {};
  const output: any[] = [
    ...(request.reasoning ? [{ type: 'reasoning', id: `rs_mock${counter}`, summary: [] }] : []),
    ...Array.from({ length: searches }, (_, i) => ({
      type: 'web_search_call',
      id: `ws_mock${counter}_${i}`,
      status: 'completed',
      action: { type: 'search', query: `mock query ${i}` },
    })),
    ...(behavior.toolCalls
      ? behavior.toolCalls.map((call, i) => ({
          type: 'function_call',
          id: `fc_mock${counter}_${i}`,
          call_id: call.id ?? `call_mock_${i}`,
          name: call.name,
          arguments: call.arguments,
          status: 'completed',
        }))
      : [
          {
            type: 'message',
            id: `msg_mock${counter}`,
            status: 'completed',
            role: 'assistant',
            content: [{ type: 'output_text', text, annotations: [], logprobs: [] }],
          },
        ]),
  ];
  const response = (status: string, done: boolean) => ({
    id,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status,
    error: null,
    incomplete_details: null,
    instructions: request.instructions ?? null,
    max_output_tokens: request.max_output_tokens ?? null,
    metadata: request.metadata ?? {},
    model: `${request.model}-2026-01-01`,
    output: done ? output : [],
    parallel_tool_calls: true,
    previous_response_id: request.previous_response_id ?? null,
    ...tier,
    store: request.store ?? true,
    temperature: 1,
    text: request.text ?? { format: { type: 'text' } },
    tool_choice: request.tool_choice ?? 'auto',
    tools: request.tools ?? [],
    top_p: 1,
    ...(done && behavior.usage !== false ? { usage } : {}),
  });
  if (!request.stream) {
    if (record) record.outputSent = outputTokens;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(response('completed', true)));
    return;
  }

  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  let sequence = 0;
  const send = (type: string, fields: object) =>
    new Promise<void>((resolve) => {
      if (res.destroyed) return resolve();
      if (record) record.eventsSent++;
      const event = { type, sequence_number: sequence++, ...fields };
      res.write(`event: ${type}\ndata: ${JSON.stringify(event)}\n\n`, () => resolve());
    });
  // Reasoning comes before the answer: generated (and billed) by the first delta.
  const sent = (tokens: number) => {
    if (record && !res.destroyed) record.outputSent = (record.outputSent ?? 0) + tokens;
  };
  await send('response.created', { response: response('in_progress', false) });
  await send('response.in_progress', { response: response('in_progress', false) });
  let delivered = 0;
  for (const [index, item] of output.entries()) {
    const place = { item_id: item.id, output_index: index };
    if (item.type === 'reasoning') {
      await send('response.output_item.added', { output_index: index, item });
      sent(reasoning);
    } else if (item.type === 'web_search_call') {
      await send('response.output_item.added', { output_index: index, item: { ...item, status: 'in_progress' } });
      for (const step of ['in_progress', 'searching', 'completed'])
        await send(`response.web_search_call.${step}`, { ...place });
    } else if (item.type === 'message') {
      await send('response.output_item.added', {
        output_index: index,
        item: { ...item, status: 'in_progress', content: [] },
      });
      await send('response.content_part.added', {
        ...place,
        content_index: 0,
        part: { type: 'output_text', text: '', annotations: [], logprobs: [] },
      });
      for (const word of words) {
        if (behavior.kind === 'cut' && delivered === (behavior.afterChunks ?? 2)) return void res.socket?.destroy();
        if (behavior.kind === 'stream-error' && delivered === (behavior.afterChunks ?? 2)) {
          await send('error', {
            code: 'server_error',
            message: behavior.message ?? 'The server had an error.',
            param: null,
          });
          return void res.end();
        }
        if (behavior.delayMs) await sleep(behavior.delayMs);
        if (res.destroyed) return;
        await send('response.output_text.delta', { ...place, content_index: 0, delta: word, logprobs: [] });
        sent(1);
        delivered++;
      }
      await send('response.output_text.done', { ...place, content_index: 0, text, logprobs: [] });
      await send('response.content_part.done', {
        ...place,
        content_index: 0,
        part: { type: 'output_text', text, annotations: [], logprobs: [] },
      });
    } else {
      await send('response.output_item.added', {
        output_index: index,
        item: { ...item, arguments: '', status: 'in_progress' },
      });
      await send('response.function_call_arguments.delta', { ...place, delta: item.arguments });
      sent(item.arguments.split(/\s+/).length);
      await send('response.function_call_arguments.done', { ...place, name: item.name, arguments: item.arguments });
    }
    await send('response.output_item.done', { output_index: index, item });
  }
  await send('response.completed', { response: response('completed', true) });
  res.end();
}
