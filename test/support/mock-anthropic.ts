/**
 * A local server speaking Anthropic's Messages API (https://docs.anthropic.com/en/api/messages): it checks the
 * headers and the request shape as the real API does (answering its 400 error body when they are wrong), answers
 * JSON messages or the documented SSE event stream, and can fail in every documented way.
 */
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

export interface MockAnthropic {
  /** Base URL ending in `/v1`. */
  url: string;
  requests: RecordedRequest[];
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
let counter = 0;

export async function startMockAnthropic(options: { apiKey: string }): Promise<MockAnthropic> {
  const requests: RecordedRequest[] = [];
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
    const problem = validate(body, String(req.headers['anthropic-beta'] ?? '').split(','));
    if (problem) return error(res, 400, problem);
    await serve(queue.shift() ?? behavior, body, res, record);
  };
  // Node does not wait for a promise a request handler returns: each request is served on its own.
  const server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
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

/** The Messages API's documented rules for a request body; the message of the first broken one. */
export function validate(body: any, betas: string[] = []): string | undefined {
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
      return `messages.${i}.content: invalid block ${JSON.stringify(block).slice(0, 80)}`;
    }
  }
  if (body.tools !== undefined) {
    for (const tool of body.tools)
      if (typeof tool.name !== 'string' || tool.input_schema?.type !== 'object')
        return 'tools: each tool needs a name and an object input_schema';
  }
  if (body.tool_choice !== undefined) {
    if (!['auto', 'any', 'tool', 'none'].includes(body.tool_choice.type)) return 'tool_choice.type: invalid';
    if (body.tool_choice.type === 'tool' && !body.tools?.some((t: any) => t.name === body.tool_choice.name))
      return 'tool_choice.name: no such tool';
  }
  return undefined;
}

function answer(b: Extract<AnthropicBehavior, { kind: 'ok' }>, request: any) {
  const forced = request.tool_choice?.type === 'tool' ? request.tool_choice.name : undefined;
  const tools: Array<{ name: string; input: unknown; id?: string }> | undefined =
    b.tools ?? (forced ? [{ name: forced, input: { answer: 'ok', n: 1 } }] : undefined);
  const content: any[] = [];
  if (!tools || b.text) content.push({ type: 'text', text: b.text ?? ANTHROPIC_TEXT });
  for (const [i, t] of (tools ?? []).entries())
    content.push({ type: 'tool_use', id: t.id ?? `toolu_mock${i}`, name: t.name, input: t.input });
  const inputTokens = Math.ceil(JSON.stringify(request.messages).length / 4);
  return { content, stopReason: b.stopReason ?? (tools ? 'tool_use' : 'end_turn'), inputTokens };
}

async function serve(b: AnthropicBehavior, request: any, res: ServerResponse, record: RecordedRequest): Promise<void> {
  if (b.kind === 'hang') return;
  if (b.kind === 'raw')
    return void res.writeHead(b.status ?? 200, b.headers ?? { 'content-type': 'application/json' }).end(b.body);
  if (b.kind === 'error') return error(res, b.status, b.message ?? `Mock error ${b.status}`, b.type);
  if (b.kind === 'echo-headers')
    return error(res, b.status, `Invalid request headers: ${JSON.stringify(record.headers)}`);
  if (b.kind === 'ok' && b.latencyMs) await sleep(b.latencyMs);
  const ok =
    b.kind === 'ok' ? b : { kind: 'ok' as const, text: Array.from({ length: 10 }, (_, i) => `part${i} `).join('') };
  const { content, stopReason, inputTokens } = answer(ok, request);
  const outputTokens = content.reduce((n, block) => n + (block.type === 'text' ? block.text.split(' ').length : 5), 0);
  const id = `msg_mock${++counter}`;
  if (!request.stream) {
    return json(res, 200, {
      id,
      type: 'message',
      role: 'assistant',
      model: request.model,
      content,
      stop_reason: stopReason,
      stop_sequence: null,
      usage: {
        input_tokens: inputTokens,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 2,
        output_tokens: outputTokens,
      },
    });
  }
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
        usage: {
          input_tokens: inputTokens,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 2,
          output_tokens: 1,
        },
      },
    });
    let index = 0;
    if (ok.thinking) {
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
      if (block.type === 'text') {
        await send('content_block_start', {
          type: 'content_block_start',
          index,
          content_block: { type: 'text', text: '' },
        });
        for (const piece of block.text.match(/\S+\s*/g) ?? [])
          await delta({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } });
      } else {
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
      }
      await send('content_block_stop', { type: 'content_block_stop', index: index++ });
    }
    await send('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: outputTokens },
    });
    if (ok.noStop) return void res.socket?.destroy();
    await send('message_stop', { type: 'message_stop' });
    res.end();
  } catch {
    // the failure behaviours stop the stream on purpose
  }
}
