/**
 * A local server speaking Anthropic's Messages API (https://docs.anthropic.com/en/api/messages): it checks the
 * headers and the request shape as the real API does (answering its 400 error body when they are wrong), answers
 * JSON messages or the documented SSE event stream, and can fail in every documented way.
 *
 * Its usage is of one of two kinds. `billing: 'fixed'` (the default, which older tests assert figures of): input
 * tokens are the JSON of the messages / 4, two cache-read tokens whatever the request, output the answer's words.
 * `billing: 'documented'`: the usage Anthropic's documented billing rules give, by the mock's own token count (see
 * `mockTokens`; it is not tollgate's tokenizer, so a test can tell whose count was billed): prompt caching by the
 * request's cache breakpoints (a prefix seen first is written, 5-minute or 1-hour by its ttl; seen again, read),
 * documents and images fetched by URL, search_result blocks, web searches (`server_tool_use`), thinking in the
 * output. Every answer's usage is kept in `bills`, so a test can price exactly what the provider billed.
 */
import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RecordedRequest } from './mock-openai.js';

export type AnthropicBehavior =
  | {
      kind: 'ok';
      text?: string;
      /** tool_use blocks; `input` streamed as input_json_delta pieces. */
      tools?: Array<{ name: string; input: unknown; id?: string }>;
      stopReason?: string;
      delayMs?: number;
      latencyMs?: number;
      /** Thinking block before the answer (its deltas must not reach the client). */
      thinking?: boolean;
      /** Close the connection after message_delta, without message_stop. */
      noStop?: boolean;
      /** Web searches to run when the request offers the web search tool (capped at its `max_uses`); 2 by default. */
      searches?: number;
    }
  | { kind: 'error'; status: number; type?: string; message?: string }
  /** An error whose message echoes the request's headers (as some proxies and misconfigured servers do). */
  | { kind: 'echo-headers'; status: number }
  | { kind: 'cut'; afterDeltas?: number }
  | { kind: 'malformed'; afterDeltas?: number }
  | { kind: 'stream-error'; afterDeltas?: number; type?: string; message?: string }
  | { kind: 'hang' }
  /** Sends exactly this response (an answer the API would never give, to see what tollgate makes of it). */
  | { kind: 'raw'; status?: number; headers?: Record<string, string>; body: string };

/** Anthropic's `usage` of a message, as the mock reports it. */
export interface MockUsage {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation?: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
  output_tokens: number;
  server_tool_use?: { web_search_requests: number };
  service_tier?: string;
}

/** What the mock billed one answered message: message_start's usage (streams) and the final one. */
export interface MockBill {
  request: RecordedRequest;
  /** message_start's usage, for a stream. */
  start?: MockUsage;
  /** The message's usage (a stream's last message_delta's, cumulative, in documented billing). */
  usage: MockUsage;
}

export interface MockAnthropicOptions {
  apiKey: string;
  /** How usage is reported (see the module's comment); `fixed` by default. */
  billing?: 'fixed' | 'documented';
  /** The fewest tokens a cached prefix may have (Anthropic's minimum is 1,024 for most models, 2,048 for Haiku). */
  minCacheTokens?: number;
}

export interface MockAnthropic {
  /** Base URL ending in `/v1`. */
  url: string;
  requests: RecordedRequest[];
  /** The usage of every message answered, in order. */
  bills: MockBill[];
  setBehavior(behavior: AnthropicBehavior): void;
  enqueue(...behaviors: AnthropicBehavior[]): void;
  /** Status the health probe (GET /v1/models) answers; 200 by default. */
  setProbeStatus(status: number): void;
  close(): Promise<void>;
}

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

export const ANTHROPIC_TEXT = 'Hello from the Anthropic mock.';
/** The thinking a documented-billing answer does when the request enables thinking. */
export const THINKING_TEXT = 'The user wants a short answer. I will give one, plainly and politely.';
/** Input tokens of a document the API fetches by URL (the mock fetches nothing: a fixed, large count). */
export const URL_DOCUMENT_TOKENS = 7_000;
/** Input tokens of an image, by URL or inline. */
export const IMAGE_TOKENS = 1_600;
/** Input tokens the results of one web search add. */
export const SEARCH_RESULT_TOKENS = 2_500;
/** Anthropic's smallest cacheable prompt prefix for most models. */
export const MIN_CACHE_TOKENS = 1_024;

/** The mock's token count of a text in documented billing: one per 4 bytes of UTF-8, rounded up. */
export const mockTokens = (text: string): number => Math.ceil(Buffer.byteLength(text, 'utf8') / 4);

let counter = 0;

export async function startMockAnthropic(options: MockAnthropicOptions): Promise<MockAnthropic> {
  const requests: RecordedRequest[] = [];
  const bills: MockBill[] = [];
  const documented = options.billing === 'documented';
  const cache = new PromptCache(options.minCacheTokens ?? MIN_CACHE_TOKENS);
  const queue: AnthropicBehavior[] = [];
  let behavior: AnthropicBehavior = { kind: 'ok' };
  let probeStatus = 200;

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    res.on('error', () => {});
    const parts: Buffer[] = [];
    for await (const part of req) parts.push(part as Buffer);
    const text = Buffer.concat(parts).toString('utf8');
    let body: any;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = text;
    }
    const record: RecordedRequest = {
      method: req.method ?? '',
      path: req.url ?? '',
      headers: req.headers,
      body,
      remotePort: req.socket.remotePort,
      eventsSent: 0,
    };
    requests.push(record);
    res.on('close', () => {
      record.closedAt = Date.now();
      record.completed = res.writableFinished;
    });
    if (req.headers['x-api-key'] !== options.apiKey) return error(res, 401, 'invalid x-api-key');
    if (!req.headers['anthropic-version']) return error(res, 400, 'anthropic-version: header is required');
    if (req.method === 'GET' && req.url?.startsWith('/v1/models')) {
      if (probeStatus !== 200) return error(res, probeStatus, 'Overloaded');
      return json(res, 200, {
        data: [{ type: 'model', id: 'claude-test', display_name: 'Claude Test', created_at: '2026-01-01T00:00:00Z' }],
        has_more: false,
        first_id: 'claude-test',
        last_id: 'claude-test',
      });
    }
    if (req.method !== 'POST' || req.url !== '/v1/messages')
      return error(res, 404, `Not found: ${req.method} ${req.url}`);
    const problem = validate(body, String(req.headers['anthropic-beta'] ?? '').split(','), documented);
    if (problem) return error(res, 400, problem);
    await serve(queue.shift() ?? behavior, body, res, record, { bills, cache: documented ? cache : undefined });
  };
  // Node does not wait for a promise a request handler returns: each request is served on its own.
  const server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    bills,
    setBehavior: (next) => void (behavior = next),
    enqueue: (...next) => void queue.push(...next),
    setProbeStatus: (status) => void (probeStatus = status),
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res
    .writeHead(status, { 'content-type': 'application/json', 'request-id': `req_mock${++counter}` })
    .end(JSON.stringify(body));
}

function error(res: ServerResponse, status: number, message: string, type = ERROR_TYPES[status] ?? 'api_error'): void {
  json(res, status, { type: 'error', error: { type, message }, request_id: `req_mock${counter}` });
}

/** Fields and roles that only a beta named in `anthropic-beta` allows (those Claude Code sends). */
const BETA_FIELDS: Record<string, string> = {
  context_management: 'context-management-2025-06-27',
  output_config: 'effort-2025-11-24',
};
const MID_CONVERSATION_SYSTEM = 'mid-conversation-system-2026-04-07';

/** Anthropic's limit on cache breakpoints in one request. */
const MAX_BREAKPOINTS = 4;

/**
 * The Messages API's documented rules for a request body; the message of the first broken one. `strict` adds the
 * rules older tests' bodies break (a thinking budget at or above max_tokens): documented billing checks them.
 */
export function validate(body: any, betas: string[] = [], strict = false): string | undefined {
  if (typeof body !== 'object' || body === null) return 'body: must be a JSON object';
  if (typeof body.model !== 'string') return 'model: Field required';
  if (!Number.isInteger(body.max_tokens) || body.max_tokens < 1) return 'max_tokens: Field required';
  if (!Array.isArray(body.messages) || body.messages.length === 0) return 'messages: at least one message is required';
  const allowed = new Set([
    'model',
    'max_tokens',
    'messages',
    'system',
    'stream',
    'stop_sequences',
    'temperature',
    'top_p',
    'top_k',
    'tools',
    'tool_choice',
    'metadata',
    'thinking',
  ]);
  for (const key of Object.keys(body)) {
    const beta = BETA_FIELDS[key];
    if (!allowed.has(key) && !(beta && betas.includes(beta))) return `${key}: Extra inputs are not permitted`;
  }
  if (body.temperature !== undefined && (body.temperature < 0 || body.temperature > 1))
    return 'temperature: range: 0..1';
  // Claude models since Opus 4.1 take one of the two.
  if (body.temperature !== undefined && body.top_p !== undefined)
    return '`temperature` and `top_p` cannot both be specified for this model. Please use only one.';
  if (
    body.system !== undefined &&
    typeof body.system !== 'string' &&
    !body.system.every((b: any) => b.type === 'text' && typeof b.text === 'string')
  )
    return 'system: text blocks only';
  if (
    body.stop_sequences !== undefined &&
    !(Array.isArray(body.stop_sequences) && body.stop_sequences.every((s: unknown) => typeof s === 'string'))
  )
    return 'stop_sequences: list of strings';
  const toolUses = new Set<string>();
  const systemTurns = betas.includes(MID_CONVERSATION_SYSTEM);
  const turns = body.messages.filter((message: any) => !(systemTurns && message.role === 'system'));
  for (const [i, message] of body.messages.entries()) {
    if (systemTurns && message.role === 'system') {
      const text = typeof message.content === 'string' || message.content?.every?.((b: any) => b.type === 'text');
      if (!text) return `messages.${i}.content: a system message takes text only`;
      continue;
    }
    if (message.role !== 'user' && message.role !== 'assistant')
      return `messages.${i}.role: Input should be 'user' or 'assistant'`;
    const turn = turns.indexOf(message);
    if (turn > 0 && turns[turn - 1].role === message.role)
      return 'messages: roles must alternate between "user" and "assistant"';
    const blocks = typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content;
    if (!Array.isArray(blocks) || blocks.length === 0)
      return `messages.${i}.content: must be a string or a non-empty list`;
    for (const block of blocks) {
      if (block.type === 'text' && typeof block.text === 'string' && block.text) continue;
      // Earlier turns' thinking goes back with its signature (extended thinking with tool use).
      if (block.type === 'thinking' && message.role === 'assistant' && typeof block.signature === 'string') continue;
      if (block.type === 'redacted_thinking' && message.role === 'assistant' && typeof block.data === 'string')
        continue;
      if (block.type === 'image' && message.role === 'user') {
        const s = block.source;
        if (s?.type === 'base64' && /^image\/(png|jpeg|gif|webp)$/.test(s.media_type) && typeof s.data === 'string')
          continue;
        if (s?.type === 'url' && /^https?:\/\//.test(s.url)) continue;
        return `messages.${i}.content: invalid image source`;
      }
      if (
        block.type === 'tool_use' &&
        message.role === 'assistant' &&
        typeof block.id === 'string' &&
        typeof block.input === 'object'
      ) {
        toolUses.add(block.id);
        continue;
      }
      if (block.type === 'tool_result' && message.role === 'user' && toolUses.has(block.tool_use_id)) continue;
      if (block.type === 'document' && message.role === 'user') {
        const s = block.source;
        if (s?.type === 'url' && /^https?:\/\//.test(s.url)) continue;
        if ((s?.type === 'text' || s?.type === 'base64') && typeof s.data === 'string') continue;
        if (s?.type === 'content' && Array.isArray(s.content)) continue;
        return `messages.${i}.content: invalid document source`;
      }
      if (
        block.type === 'search_result' &&
        message.role === 'user' &&
        typeof block.source === 'string' &&
        typeof block.title === 'string' &&
        Array.isArray(block.content) &&
        block.content.every((b: any) => b.type === 'text' && typeof b.text === 'string')
      )
        continue;
      // Web searches an earlier answer ran come back with the conversation.
      if (block.type === 'server_tool_use' && message.role === 'assistant' && typeof block.id === 'string') {
        toolUses.add(block.id);
        continue;
      }
      if (block.type === 'web_search_tool_result' && message.role === 'assistant' && toolUses.has(block.tool_use_id))
        continue;
      return `messages.${i}.content: invalid block ${JSON.stringify(block).slice(0, 80)}`;
    }
  }
  if (body.tools !== undefined) {
    for (const tool of body.tools) {
      // Server tools (web_search_20250305, ...) are Anthropic's: a type and a name, no input_schema.
      if (tool.type !== undefined && tool.type !== 'custom') {
        if (!/^web_search_\d+$/.test(tool.type) || tool.name !== 'web_search')
          return `tools: unknown server tool ${JSON.stringify(tool.type)}`;
        if (tool.max_uses !== undefined && !(Number.isInteger(tool.max_uses) && tool.max_uses > 0))
          return 'tools.max_uses: must be a positive integer';
        continue;
      }
      if (typeof tool.name !== 'string' || tool.input_schema?.type !== 'object')
        return 'tools: each tool needs a name and an object input_schema';
    }
  }
  if (body.tool_choice !== undefined) {
    if (!['auto', 'any', 'tool', 'none'].includes(body.tool_choice.type)) return 'tool_choice.type: invalid';
    if (body.tool_choice.type === 'tool' && !body.tools?.some((t: any) => t.name === body.tool_choice.name))
      return 'tool_choice.name: no such tool';
  }
  return cacheProblem(body) ?? thinkingProblem(body, strict);
}

/** cache_control: `{type: 'ephemeral'}` with an optional ttl of 5m or 1h, on at most four blocks. */
function cacheProblem(body: any): string | undefined {
  const holders: any[] = [...(body.tools ?? []), ...(Array.isArray(body.system) ? body.system : [])];
  for (const message of body.messages)
    if (Array.isArray(message.content))
      for (const block of message.content) {
        holders.push(block);
        if (block.type === 'tool_result' && Array.isArray(block.content)) holders.push(...block.content);
      }
  const marked = holders.filter((holder) => holder?.cache_control !== undefined);
  for (const { cache_control: control } of marked)
    if (control?.type !== 'ephemeral' || (control.ttl !== undefined && !['5m', '1h'].includes(control.ttl)))
      return 'cache_control: Input should be {"type": "ephemeral", "ttl": "5m" | "1h"}';
  if (marked.length > MAX_BREAKPOINTS)
    return `A maximum of ${MAX_BREAKPOINTS} blocks with cache_control may be provided. Found ${marked.length}.`;
  return undefined;
}

/** Extended thinking's rules: a budget of at least 1,024 below max_tokens, no temperature, no forced tool. */
function thinkingProblem(body: any, strict: boolean): string | undefined {
  const { thinking } = body;
  if (thinking === undefined) return undefined;
  if (!['enabled', 'disabled', 'adaptive'].includes(thinking?.type)) return 'thinking.type: invalid';
  if (thinking.type !== 'enabled') return undefined;
  if (!Number.isInteger(thinking.budget_tokens) || thinking.budget_tokens < 1_024)
    return 'thinking.enabled.budget_tokens: Input should be greater than or equal to 1024';
  if (!strict) return undefined;
  if (thinking.budget_tokens >= body.max_tokens) return '`max_tokens` must be greater than `thinking.budget_tokens`';
  if (body.temperature !== undefined && body.temperature !== 1)
    return '`temperature` may only be set to 1 when thinking is enabled';
  if (body.top_p !== undefined && body.top_p < 0.95) return '`top_p` must be 0.95 or more when thinking is enabled';
  if (['any', 'tool'].includes(body.tool_choice?.type))
    return 'Thinking may not be enabled when tool_choice forces tool use.';
  // The assistant turn a tool result (or a prefill) continues must start with its thinking block.
  const last = body.messages.at(-1);
  const continued =
    last?.role === 'assistant'
      ? last
      : Array.isArray(last?.content) && last.content.some((b: any) => b.type === 'tool_result')
        ? body.messages.at(-2)
        : undefined;
  const opening = Array.isArray(continued?.content) ? continued.content[0]?.type : 'text';
  if (continued && !['thinking', 'redacted_thinking'].includes(opening))
    return `Expected \`thinking\` or \`redacted_thinking\`, but found \`${opening}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block.`;
  return undefined;
}

type OkBehavior = Extract<AnthropicBehavior, { kind: 'ok' }>;

/** How the mock bills: the bills kept, and the prompt cache in documented billing (undefined: fixed billing). */
interface Billing {
  bills: MockBill[];
  cache: PromptCache | undefined;
}

interface Answer {
  content: any[];
  stopReason: string;
  /** message_start's usage. */
  start: MockUsage;
  /** The message's usage. */
  usage: MockUsage;
}

function answer(b: OkBehavior, request: any, billing: Billing): Answer {
  const forced = request.tool_choice?.type === 'tool' ? request.tool_choice.name : undefined;
  const tools: Array<{ name: string; input: unknown; id?: string }> | undefined =
    b.tools ?? (forced ? [{ name: forced, input: { answer: 'ok', n: 1 } }] : undefined);
  const content: any[] = [];
  if (!tools || b.text) content.push({ type: 'text', text: b.text ?? ANTHROPIC_TEXT });
  for (const [i, t] of (tools ?? []).entries())
    content.push({ type: 'tool_use', id: t.id ?? `toolu_mock${i}`, name: t.name, input: t.input });
  const stopReason = b.stopReason ?? (tools ? 'tool_use' : 'end_turn');
  if (!billing.cache) {
    const input = Math.ceil(JSON.stringify(request.messages).length / 4);
    const output = content.reduce((n, block) => n + (block.type === 'text' ? block.text.split(' ').length : 5), 0);
    const start = { input_tokens: input, cache_creation_input_tokens: 0, cache_read_input_tokens: 2, output_tokens: 1 };
    return { content, stopReason, start, usage: { ...start, output_tokens: output } };
  }
  return documentedAnswer(b, request, content, stopReason, billing.cache);
}

/**
 * An answer billed by Anthropic's documented rules: the prompt's tokens by the mock's count, split into cache reads,
 * cache writes (by ttl) and plain input by the request's cache breakpoints; the web searches it runs (their results
 * are input tokens); thinking first when the request enables it, counted in the output with the answer.
 */
function documentedAnswer(b: OkBehavior, request: any, answered: any[], stop: string, cache: PromptCache): Answer {
  const prompt = cache.bill(request);
  const content: any[] = [];
  if (b.thinking || ['enabled', 'adaptive'].includes(request.thinking?.type))
    content.push({ type: 'thinking', thinking: THINKING_TEXT, signature: `sig_mock${counter}` });
  const search = (request.tools ?? []).find((tool: any) => /^web_search_\d+$/.test(String(tool.type)));
  const searches = search ? Math.min(b.searches ?? 2, search.max_uses ?? Infinity) : 0;
  for (let i = 0; i < searches; i++) {
    const id = `srvtoolu_mock${++counter}`;
    content.push({ type: 'server_tool_use', id, name: 'web_search', input: { query: `mock query ${i + 1}` } });
    content.push({
      type: 'web_search_tool_result',
      tool_use_id: id,
      content: [
        {
          type: 'web_search_result',
          url: `https://example.com/result-${i + 1}`,
          title: `Result ${i + 1}`,
          encrypted_content: 'bW9jaw==',
          page_age: null,
        },
      ],
    });
  }
  content.push(...answered);
  let output = 0;
  for (const block of content) {
    if (block.type === 'thinking') output += mockTokens(block.thinking);
    else if (block.type === 'text') output += mockTokens(block.text);
    else if (block.type === 'tool_use' || block.type === 'server_tool_use')
      output += mockTokens(block.name + JSON.stringify(block.input));
  }
  // The model stops at max_tokens (the mock's answer is not cut, only its count and stop reason).
  const stopReason = output > request.max_tokens ? 'max_tokens' : stop;
  output = Math.min(output, request.max_tokens);
  const base = {
    cache_creation_input_tokens: prompt.write5m + prompt.write1h,
    cache_read_input_tokens: prompt.read,
    cache_creation: { ephemeral_5m_input_tokens: prompt.write5m, ephemeral_1h_input_tokens: prompt.write1h },
  };
  const start: MockUsage = { input_tokens: prompt.input, ...base, output_tokens: 1, service_tier: 'standard' };
  const usage: MockUsage = {
    input_tokens: prompt.input + searches * SEARCH_RESULT_TOKENS,
    ...base,
    output_tokens: output,
    ...(search ? { server_tool_use: { web_search_requests: searches } } : {}),
    service_tier: 'standard',
  };
  return { content, stopReason, start, usage };
}

/** The prompt's tokens as billed: plain input, cache reads, and cache writes by ttl. */
interface PromptBill {
  input: number;
  read: number;
  write5m: number;
  write1h: number;
}

/**
 * Anthropic's prompt cache (https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching), as the mock keeps
 * it: the prompt is tools, then system, then messages, block by block; a block with `cache_control` ends a cacheable
 * prefix. The longest prefix of the request's already cached (same model, same blocks) is read; each later
 * breakpoint's prefix is written, the tokens since the previous one at that breakpoint's ttl; a prefix below the
 * minimum length is not cached (its tokens stay plain input); what follows the last breakpoint is plain input.
 * Entries never expire while the mock runs.
 */
class PromptCache {
  private readonly prefixes = new Set<string>();

  constructor(private readonly minTokens: number) {}

  bill(request: any): PromptBill {
    const units = promptUnits(request);
    const total = units.reduce((n, unit) => n + unit.tokens, 0);
    // Per unit: the tokens up to and including it, and the key of that prefix.
    const upTo: number[] = [];
    const keys: string[] = [];
    const hash = createHash('sha256').update(String(request.model));
    let sum = 0;
    for (const unit of units) {
      sum += unit.tokens;
      upTo.push(sum);
      hash.update('\n').update(unit.key);
      keys.push(hash.copy().digest('hex'));
    }
    const breakpoints = units.flatMap((unit, i) => (unit.ttl ? [i] : []));
    const hit = breakpoints.findLast((i) => this.prefixes.has(keys[i]!));
    const read = hit === undefined ? 0 : upTo[hit]!;
    let written = read;
    let write5m = 0;
    let write1h = 0;
    for (const i of breakpoints) {
      if (hit !== undefined && i <= hit) continue;
      if (upTo[i]! < this.minTokens) continue;
      if (units[i]!.ttl === '1h') write1h += upTo[i]! - written;
      else write5m += upTo[i]! - written;
      written = upTo[i]!;
      this.prefixes.add(keys[i]!);
    }
    return { input: total - written, read, write5m, write1h };
  }
}

/** One block of the prompt: its tokens, its content's key (without cache_control), its breakpoint's ttl if any. */
interface PromptUnit {
  tokens: number;
  key: string;
  ttl?: '5m' | '1h';
}

function promptUnits(request: any): PromptUnit[] {
  const unit = (block: any, tokens: number): PromptUnit => {
    const { cache_control: control, ...rest } = block;
    return { tokens, key: JSON.stringify(rest), ...(control ? { ttl: control.ttl === '1h' ? '1h' : '5m' } : {}) };
  };
  const units: PromptUnit[] = [];
  for (const tool of request.tools ?? []) {
    const { cache_control: _control, ...definition } = tool;
    units.push(unit(tool, mockTokens(JSON.stringify(definition))));
  }
  const system = typeof request.system === 'string' ? [{ type: 'text', text: request.system }] : request.system;
  for (const block of system ?? []) units.push(unit(block, blockTokens(block)));
  for (const message of request.messages) {
    const blocks = typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content;
    for (const block of blocks) units.push(unit({ role: message.role, ...block }, blockTokens(block)));
  }
  return units;
}

/** A prompt block's input tokens by the mock's count. */
function blockTokens(block: any): number {
  switch (block.type) {
    case 'text':
      return mockTokens(block.text);
    case 'image':
      return IMAGE_TOKENS;
    case 'document': {
      const { source } = block;
      const described = mockTokens(`${block.title ?? ''}${block.context ?? ''}`);
      if (source?.type === 'url') return described + URL_DOCUMENT_TOKENS;
      if (source?.type === 'text' || source?.type === 'base64') return described + mockTokens(String(source.data));
      if (source?.type === 'content') return described + nestedTokens(source.content);
      return described;
    }
    case 'search_result':
      return mockTokens(`${block.title ?? ''}${block.source ?? ''}`) + nestedTokens(block.content);
    case 'tool_use':
    case 'server_tool_use':
      return mockTokens(block.name + JSON.stringify(block.input));
    case 'tool_result':
      return typeof block.content === 'string' ? mockTokens(block.content) : nestedTokens(block.content);
    case 'thinking':
      return mockTokens(block.thinking);
    case 'redacted_thinking':
      return mockTokens(block.data);
    default:
      return mockTokens(JSON.stringify(block));
  }
}

const nestedTokens = (blocks: unknown): number =>
  Array.isArray(blocks) ? blocks.reduce((n: number, block) => n + blockTokens(block), 0) : 0;

async function serve(
  b: AnthropicBehavior,
  request: any,
  res: ServerResponse,
  record: RecordedRequest,
  billing: Billing,
): Promise<void> {
  if (b.kind === 'hang') return;
  if (b.kind === 'raw')
    return void res.writeHead(b.status ?? 200, b.headers ?? { 'content-type': 'application/json' }).end(b.body);
  if (b.kind === 'error') return error(res, b.status, b.message ?? `Mock error ${b.status}`, b.type);
  if (b.kind === 'echo-headers')
    return error(res, b.status, `Invalid request headers: ${JSON.stringify(record.headers)}`);
  if (b.kind === 'ok' && b.latencyMs) await sleep(b.latencyMs);
  const ok =
    b.kind === 'ok' ? b : { kind: 'ok' as const, text: Array.from({ length: 10 }, (_, i) => `part${i} `).join('') };
  const { content, stopReason, start, usage } = answer(ok, request, billing);
  const id = `msg_mock${++counter}`;
  if (!request.stream) {
    billing.bills.push({ request: record, usage });
    return json(res, 200, {
      id,
      type: 'message',
      role: 'assistant',
      model: request.model,
      content,
      stop_reason: stopReason,
      stop_sequence: null,
      usage,
    });
  }
  billing.bills.push({ request: record, start, usage });
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  const send = (event: string, data: unknown) =>
    new Promise<void>((resolve) => {
      if (res.destroyed) return resolve();
      record.eventsSent++;
      res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`, () => resolve());
    });
  const failAfter = b.kind === 'ok' ? Infinity : (b.afterDeltas ?? 3);
  let deltas = 0;
  const delta = async (data: unknown) => {
    if (deltas++ === failAfter) {
      if (b.kind === 'cut') res.socket?.destroy();
      else if (b.kind === 'malformed')
        await new Promise((r) =>
          res.write('event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": {\n\n', r),
        );
      else if (b.kind === 'stream-error')
        await send('error', {
          type: 'error',
          error: { type: b.type ?? 'overloaded_error', message: b.message ?? 'Overloaded' },
        });
      if (b.kind !== 'cut') res.end();
      throw new Error('stopped');
    }
    if (ok.delayMs) await sleep(ok.delayMs);
    await send('content_block_delta', data);
  };
  try {
    await send('message_start', {
      type: 'message_start',
      message: {
        id,
        type: 'message',
        role: 'assistant',
        model: request.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: start,
      },
    });
    let index = 0;
    // Fixed billing: the thinking block a behaviour asks for is streamed only (and not counted).
    if (ok.thinking && !billing.cache) {
      await send('content_block_start', {
        type: 'content_block_start',
        index,
        content_block: { type: 'thinking', thinking: '' },
      });
      await send('content_block_delta', {
        type: 'content_block_delta',
        index,
        delta: { type: 'thinking_delta', thinking: 'Let me think.' },
      });
      await send('content_block_delta', {
        type: 'content_block_delta',
        index,
        delta: { type: 'signature_delta', signature: 'sig' },
      });
      await send('content_block_stop', { type: 'content_block_stop', index: index++ });
    }
    await send('ping', { type: 'ping' });
    for (const block of content) {
      if (block.type === 'thinking') {
        await send('content_block_start', {
          type: 'content_block_start',
          index,
          content_block: { type: 'thinking', thinking: '' },
        });
        for (const piece of block.thinking.match(/\S+\s*/g) ?? [])
          await send('content_block_delta', {
            type: 'content_block_delta',
            index,
            delta: { type: 'thinking_delta', thinking: piece },
          });
        await send('content_block_delta', {
          type: 'content_block_delta',
          index,
          delta: { type: 'signature_delta', signature: block.signature },
        });
      } else if (block.type === 'text') {
        await send('content_block_start', {
          type: 'content_block_start',
          index,
          content_block: { type: 'text', text: '' },
        });
        for (const piece of block.text.match(/\S+\s*/g) ?? [])
          await delta({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } });
      } else if (block.type === 'tool_use') {
        await send('content_block_start', {
          type: 'content_block_start',
          index,
          content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} },
        });
        const args = JSON.stringify(block.input);
        for (let i = 0; i < args.length; i += 7)
          await delta({
            type: 'content_block_delta',
            index,
            delta: { type: 'input_json_delta', partial_json: args.slice(i, i + 7) },
          });
      } else if (block.type === 'server_tool_use') {
        await send('content_block_start', {
          type: 'content_block_start',
          index,
          content_block: { type: 'server_tool_use', id: block.id, name: block.name, input: {} },
        });
        await send('content_block_delta', {
          type: 'content_block_delta',
          index,
          delta: { type: 'input_json_delta', partial_json: JSON.stringify(block.input) },
        });
      } else {
        // Blocks that arrive whole (web_search_tool_result).
        await send('content_block_start', { type: 'content_block_start', index, content_block: block });
      }
      await send('content_block_stop', { type: 'content_block_stop', index: index++ });
    }
    await send('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: stopReason, stop_sequence: null },
      // Anthropic's message_delta usage is cumulative; fixed billing sends the output count alone, as it did.
      usage: billing.cache ? usage : { output_tokens: usage.output_tokens },
    });
    if (ok.noStop) return void res.socket?.destroy();
    await send('message_stop', { type: 'message_stop' });
    res.end();
  } catch {
    // the failure behaviours stop the stream on purpose
  }
}
