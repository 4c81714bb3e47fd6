/**
 * A local upstream speaking OpenAI's chat-completions wire format, for adapter tests and the benchmark.
 * Answers `POST /v1/chat/completions` (and `/v1/completions`, `/v1/embeddings`) with JSON or SSE depending on the
 * request's `stream` field.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { serveResponses } from './mock-responses.js';

export interface MockToolCall {
  name: string;
  /** JSON text of the arguments; streamed in `chunks` pieces. */
  arguments: string;
  id?: string;
}

export type Behavior =
  /** A normal answer: text (or tool calls), as one JSON body or as `chunks` SSE deltas `delayMs` apart. */
  | {
      kind: 'ok';
      content?: string;
      /** Number of content (or argument) deltas; defaults to one per word. */
      chunks?: number;
      delayMs?: number;
      /** Delay before the response headers. */
      latencyMs?: number;
      /** `false` omits usage even when asked for it. */
      usage?: boolean;
      toolCalls?: MockToolCall[];
      /** Send an SSE comment (`: keep-alive`) before the first chunk. */
      comment?: boolean;
    }
  /** OpenAI's error envelope with the given status; `retryAfter` (seconds) adds the Retry-After header. */
  | {
      kind: 'error';
      status: number;
      message?: string;
      type?: string;
      code?: string | null;
      param?: string | null;
      retryAfter?: number;
    }
  /** An error whose message echoes the request's headers (as some proxies and misconfigured servers do). */
  | { kind: 'echo-headers'; status: number }
  /** Streams `afterChunks` content chunks, then destroys the socket. */
  | { kind: 'cut'; afterChunks?: number }
  /** Streams `afterChunks` content chunks, then an event whose data is not JSON. */
  | { kind: 'malformed'; afterChunks?: number }
  /** Streams `afterChunks` content chunks, then `data: {"error": {...}}`. */
  | { kind: 'stream-error'; afterChunks?: number; message?: string; code?: string | number | null }
  /** Never answers. */
  | { kind: 'hang' }
  /** Sends exactly this response. */
  | { kind: 'raw'; status?: number; headers?: Record<string, string>; body: string }
  /** Non-streaming: the headers and the first `bytes` of a JSON answer, then the socket is destroyed (reset mid-body). */
  | { kind: 'reset'; bytes?: number }
  /** Streams `afterChunks` content chunks, then goes silent with the connection open (a timeout mid-stream). */
  | { kind: 'stall'; afterChunks?: number }
  /** Streams `afterChunks` content chunks, then ends the response cleanly: no finish reason, no usage, no [DONE]. */
  | { kind: 'truncated'; afterChunks?: number }
  /**
   * About `bytes` of answer: a JSON body with one enormous content string, or as many SSE chunks of `chunkBytes`
   * (default 64 KiB) of text as it takes (never ending with [DONE] until all were sent); no usage.
   */
  | { kind: 'huge'; bytes: number; chunkBytes?: number; chunked?: boolean };

export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: any;
  /** The client's port: equal ports mean a reused keep-alive connection. */
  remotePort: number | undefined;
  /** SSE `data:` events written to the response so far (a client that went away stops the count). */
  eventsSent: number;
  /** When the response closed (ms since the epoch); undefined while it is open. */
  closedAt?: number;
  /** Whether the response had been sent in full when it closed (false: the connection went away first). */
  completed?: boolean;
}

export interface MockOpenAI {
  /** Base URL ending in `/v1`. */
  url: string;
  requests: RecordedRequest[];
  /** The behaviour of every request not served from the queue. */
  setBehavior(behavior: Behavior): void;
  /** Behaviours for the next requests, one each, before falling back to the default. */
  enqueue(...behaviors: Behavior[]): void;
  close(): Promise<void>;
}

export interface MockOpenAIOptions {
  /** When set, requests must carry `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  behavior?: Behavior;
  /** Chooses the behaviour of a request from its body, before the queue and the default (undefined: not chosen). */
  route?: (body: any) => Behavior | undefined;
}

const DEFAULT_CONTENT = 'Hello from the mock upstream.';
const records = new WeakMap<ServerResponse, RecordedRequest>();
let counter = 0;

export async function startMockOpenAI(options: MockOpenAIOptions = {}): Promise<MockOpenAI> {
  const requests: RecordedRequest[] = [];
  const queue: Behavior[] = [];
  let behavior: Behavior = options.behavior ?? { kind: 'ok' };
  const storedResponses = new Set<string>();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    res.on('error', () => {});
    const text = await readBody(req);
    let body: any;
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
    // The model list (health probes, `tollgate doctor`) is answered apart: it is not a recorded request.
    if (req.method === 'GET' && req.url?.startsWith('/v1/models')) {
      const authorized = !options.apiKey || req.headers.authorization === `Bearer ${options.apiKey}`;
      if (!authorized)
        return sendError(res, {
          status: 401,
          message: 'Incorrect API key provided.',
          type: 'invalid_request_error',
          code: 'invalid_api_key',
        });
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(
          JSON.stringify({ object: 'list', data: [{ id: 'gpt-mock', object: 'model', created: 0, owned_by: 'mock' }] }),
        );
      return;
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
    records.set(res, record);
    res.on('close', () => {
      record.closedAt = Date.now();
      record.completed = res.writableFinished;
    });

    if (options.apiKey && req.headers.authorization !== `Bearer ${options.apiKey}`) {
      const key = (req.headers.authorization ?? '').replace(/^Bearer /, '');
      return sendError(res, {
        status: 401,
        message: `Incorrect API key provided: ${key.slice(0, 3)}***. You can find your API key at https://platform.openai.com/account/api-keys.`,
        type: 'invalid_request_error',
        code: 'invalid_api_key',
      });
    }
    if (req.method === 'POST' && req.url === '/v1/responses') {
      return serveResponses(options.route?.(body) ?? queue.shift() ?? behavior, body, res, storedResponses, sendError);
    }
    if (req.method === 'POST' && req.url === '/v1/embeddings') {
      const next = queue.shift() ?? behavior;
      if (next.kind === 'error' || next.kind === 'raw') return serve(next, body, res);
      return serveEmbeddings(body, res);
    }
    if (req.method === 'POST' && req.url === '/v1/completions') {
      return serveTextCompletion(options.route?.(body) ?? queue.shift() ?? behavior, body, res);
    }
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
      return sendError(res, {
        status: 404,
        message: `Unknown request URL: ${req.method} ${req.url}.`,
        code: 'unknown_url',
      });
    }
    if (typeof body !== 'object' || body === null) {
      return sendError(res, { status: 400, message: 'We could not parse the JSON body of your request.' });
    }
    await serve(options.route?.(body) ?? queue.shift() ?? behavior, body, res);
  };
  // Node does not wait for a promise a request handler returns: each request is served on its own.
  const server = createServer((req, res) => void handle(req, res));

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    setBehavior: (next) => {
      behavior = next;
    },
    enqueue: (...next) => queue.push(...next),
    close: () => {
      server.closeAllConnections(); // hanging and keep-alive sockets included
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * POST /v1/embeddings as OpenAI documents it: `input` a string, strings, a token array or token arrays; floats or
 * base64 float32 per `encoding_format`; `dimensions` for the length (1,536 by default); usage is input tokens
 * (here: words, or the token array's length). Vectors are derived from each input's text.
 */
function serveEmbeddings(body: any, res: ServerResponse): void {
  const input = body?.input;
  const list: unknown[] =
    typeof input === 'string'
      ? [input]
      : Array.isArray(input) && input.every((n) => typeof n === 'number')
        ? [input]
        : input;
  const valid =
    typeof body?.model === 'string' &&
    Array.isArray(list) &&
    list.length > 0 &&
    list.every((item) => (typeof item === 'string' && item !== '') || (Array.isArray(item) && item.length > 0));
  if (!valid) return sendError(res, { status: 400, message: "'$.input' is invalid.", param: 'input' });
  if (body.encoding_format !== undefined && !['float', 'base64'].includes(body.encoding_format))
    return sendError(res, { status: 400, message: 'Invalid encoding_format', param: 'encoding_format' });
  const dimensions = body.dimensions ?? 1536;
  let tokens = 0;
  const data = list.map((item, index) => {
    const text = typeof item === 'string' ? item : (item as number[]).join(' ');
    tokens += typeof item === 'string' ? item.split(/\s+/).filter(Boolean).length : (item as number[]).length;
    const vector = Array.from({ length: dimensions }, (_, i) =>
      Math.sin(text.length + i + text.charCodeAt(i % text.length)),
    );
    const embedding =
      body.encoding_format === 'base64' ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : vector;
    return { object: 'embedding', index, embedding };
  });
  res.writeHead(200, { 'content-type': 'application/json' }).end(
    JSON.stringify({
      object: 'list',
      data,
      model: body.model,
      usage: { prompt_tokens: tokens, total_tokens: tokens },
    }),
  );
}

/**
 * POST /v1/completions (legacy text completions) as OpenAI documents it: `n` choices per prompt numbered prompt by
 * prompt, `echo` puts the prompt in front, `max_tokens` (16 by default) cuts the content by words; streamed as
 * `text_completion` chunks, a finishing chunk each, `usage` (words) in a last chunk when asked, then [DONE].
 * `ok`, `cut` and `stream-error` speak this format; other behaviours are served as for chat.
 */
async function serveTextCompletion(behavior: Behavior, request: any, res: ServerResponse): Promise<void> {
  if (typeof request?.model !== 'string' || request.prompt === undefined)
    return sendError(res, { status: 400, message: "'prompt' is a required property", param: 'prompt' });
  if (behavior.kind !== 'ok' && behavior.kind !== 'cut' && behavior.kind !== 'stream-error')
    return serve(behavior, request, res);
  const ok = behavior.kind === 'ok' ? behavior : undefined;
  if (ok?.latencyMs) await sleep(ok.latencyMs);
  const prompt = request.prompt;
  const prompts: string[] = (typeof prompt === 'string' || typeof prompt[0] === 'number' ? [prompt] : prompt).map(
    (p: string | number[]) => (typeof p === 'string' ? p : p.join(' ')),
  );
  const words = split(ok?.content ?? DEFAULT_CONTENT);
  const limit = request.max_tokens ?? 16;
  const pieces = words.slice(0, limit);
  const finishReason = pieces.length < words.length ? 'length' : 'stop';
  const n = request.n ?? 1;
  const choices = prompts.flatMap((text, p) =>
    Array.from({ length: n }, (_, i) => ({ index: p * n + i, echo: request.echo ? text : '' })),
  );
  const promptTokens = prompts.reduce((sum, text) => sum + split(text).length, 0);
  const usage = {
    prompt_tokens: promptTokens,
    completion_tokens: pieces.length * choices.length,
    total_tokens: promptTokens + pieces.length * choices.length,
  };
  const head = {
    id: `cmpl-mock${++counter}`,
    object: 'text_completion',
    created: Math.floor(Date.now() / 1000),
    model: request.model,
  };
  if (!request.stream) {
    const answer = {
      ...head,
      choices: choices.map((c) => ({
        text: c.echo + pieces.join(''),
        index: c.index,
        logprobs: null,
        finish_reason: finishReason,
      })),
      ...(ok?.usage === false ? {} : { usage }),
    };
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    return;
  }
  const out = new EventWriter(res, request);
  const withUsage = request.stream_options?.include_usage === true;
  const chunk = (index: number, text: string, finish: string | null = null) =>
    out.data({
      ...head,
      choices: [{ text, index, logprobs: null, finish_reason: finish }],
      ...(withUsage ? { usage: null } : {}),
    });
  for (const c of choices) if (c.echo) await chunk(c.index, c.echo);
  const sent = behavior.kind === 'ok' ? pieces.length : (behavior.afterChunks ?? 2);
  for (const piece of pieces.slice(0, sent)) {
    if (ok?.delayMs) await sleep(ok.delayMs);
    if (out.gone) return;
    for (const c of choices) await chunk(c.index, piece);
  }
  if (behavior.kind === 'cut') {
    res.socket?.destroy();
    return;
  }
  if (behavior.kind === 'stream-error') {
    await out.data({
      error: { message: behavior.message ?? 'The server had an error.', type: 'server_error', param: null, code: null },
    });
    res.end();
    return;
  }
  for (const c of choices) await chunk(c.index, '', finishReason);
  if (withUsage && ok?.usage !== false) await out.data({ ...head, choices: [], usage });
  await out.done();
}

async function readBody(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  return Buffer.concat(parts).toString('utf8');
}

function sendError(
  res: ServerResponse,
  e: {
    status: number;
    message?: string;
    type?: string;
    code?: string | null;
    param?: string | null;
    retryAfter?: number;
  },
): void {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (e.retryAfter !== undefined) headers['retry-after'] = String(e.retryAfter);
  res.writeHead(e.status, headers).end(
    JSON.stringify({
      error: {
        message: e.message ?? `Mock error ${e.status}`,
        type: e.type ?? (e.status >= 500 ? 'server_error' : 'invalid_request_error'),
        param: e.param ?? null,
        code: e.code ?? null,
      },
    }),
  );
}

async function serve(behavior: Behavior, request: any, res: ServerResponse): Promise<void> {
  switch (behavior.kind) {
    case 'hang':
      return;
    case 'error':
      return sendError(res, behavior);
    case 'echo-headers':
      return sendError(res, {
        status: behavior.status,
        message: `Invalid request headers: ${JSON.stringify(records.get(res)?.headers)}`,
      });
    case 'raw':
      res
        .writeHead(behavior.status ?? 200, behavior.headers ?? { 'content-type': 'application/json' })
        .end(behavior.body);
      return;
    case 'reset': {
      const text = JSON.stringify(
        completion({ kind: 'ok', content: 'This answer is cut in the middle of its body. '.repeat(20) }, request),
      );
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)) });
      res.write(text.slice(0, behavior.bytes ?? 100), () => res.socket?.destroy());
      return;
    }
    case 'stall':
      if (request.stream) return streamFailure(behavior, request, res);
      res.writeHead(200, { 'content-type': 'application/json' }).write('{"id": "chatcmpl-stalled", "choices": [');
      return; // silent until the client gives up
    case 'huge':
      return hugeReply(behavior, request, res);
    case 'ok':
      if (behavior.latencyMs) await sleep(behavior.latencyMs);
      if (request.stream) return streamReply(behavior, request, res);
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(completion(behavior, request)));
      return;
    default:
      return streamFailure(behavior, request, res);
  }
}

function usageFor(request: any, completionTokens: number) {
  const promptTokens = Math.ceil(JSON.stringify(request.messages ?? []).length / 4);
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completionTokens,
    total_tokens: promptTokens + completionTokens,
  };
}

/** Splits `text` into `n` pieces of nearly equal length, or into words (with their leading space). */
function split(text: string, n?: number): string[] {
  if (!n) return text.match(/\s*\S+/g) ?? [text];
  const size = Math.max(1, Math.ceil(text.length / n));
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
  return pieces;
}

const toolCallId = (call: MockToolCall, i: number) => call.id ?? `call_mock_${i}`;

function completion(b: Extract<Behavior, { kind: 'ok' }>, request: any) {
  const content = b.content ?? DEFAULT_CONTENT;
  const tools = b.toolCalls;
  const message = tools
    ? {
        role: 'assistant',
        content: null,
        tool_calls: tools.map((call, i) => ({
          id: toolCallId(call, i),
          type: 'function',
          function: { name: call.name, arguments: call.arguments },
        })),
        refusal: null,
      }
    : { role: 'assistant', content, refusal: null };
  const tokens = tools ? tools.reduce((sum, call) => sum + split(call.arguments).length, 0) : split(content).length;
  return {
    id: `chatcmpl-mock${++counter}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: request.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: tools ? 'tool_calls' : 'stop' }],
    ...(b.usage === false ? {} : { usage: usageFor(request, tokens) }),
    system_fingerprint: 'fp_mock',
  };
}

/** Writes SSE events; stops quietly once the client has gone. */
class EventWriter {
  private readonly id = `chatcmpl-mock${++counter}`;
  private readonly created = Math.floor(Date.now() / 1000);
  private readonly includeUsage: boolean;

  constructor(
    private readonly res: ServerResponse,
    private readonly request: any,
  ) {
    this.includeUsage = request.stream_options?.include_usage === true;
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  }

  get gone(): boolean {
    return this.res.destroyed;
  }

  /** Resolves once the bytes are handed to the socket, so that a following cut does not drop them. */
  write(text: string): Promise<void> {
    if (this.gone) return Promise.resolve();
    return new Promise((resolve) => this.res.write(text, () => resolve()));
  }

  chunk(delta: object, finishReason: string | null = null): Promise<void> {
    return this.data({
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.request.model,
      system_fingerprint: 'fp_mock',
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
      // OpenAI sends `usage: null` on every chunk but the last when usage was asked for.
      ...(this.includeUsage ? { usage: null } : {}),
    });
  }

  async usage(completionTokens: number): Promise<void> {
    if (!this.includeUsage) return;
    await this.data({
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.request.model,
      system_fingerprint: 'fp_mock',
      choices: [],
      usage: usageFor(this.request, completionTokens),
    });
  }

  data(json: unknown): Promise<void> {
    const record = records.get(this.res);
    if (record && !this.gone) record.eventsSent++;
    return this.write(`data: ${JSON.stringify(json)}\n\n`);
  }

  async done(): Promise<void> {
    await this.write('data: [DONE]\n\n');
    this.res.end();
  }
}

async function streamReply(b: Extract<Behavior, { kind: 'ok' }>, request: any, res: ServerResponse): Promise<void> {
  const out = new EventWriter(res, request);
  const pause = () => (b.delayMs ? sleep(b.delayMs) : Promise.resolve());
  if (b.comment) await out.write(': keep-alive\n\n');
  let tokens = 0;
  if (b.toolCalls) {
    await out.chunk({ role: 'assistant', content: null, refusal: null });
    for (const [index, call] of b.toolCalls.entries()) {
      const header = {
        index,
        id: toolCallId(call, index),
        type: 'function',
        function: { name: call.name, arguments: '' },
      };
      await out.chunk({ tool_calls: [header] });
      for (const piece of split(call.arguments, b.chunks)) {
        await pause();
        if (out.gone) return;
        await out.chunk({ tool_calls: [{ index, function: { arguments: piece } }] });
        tokens++;
      }
    }
  } else {
    await out.chunk({ role: 'assistant', content: '', refusal: null });
    const content =
      b.content ?? (b.chunks ? Array.from({ length: b.chunks }, (_, i) => `token${i} `).join('') : DEFAULT_CONTENT);
    for (const piece of split(content, b.chunks)) {
      await pause();
      if (out.gone) return;
      await out.chunk({ content: piece });
      tokens++;
    }
  }
  await out.chunk({}, b.toolCalls ? 'tool_calls' : 'stop');
  if (b.usage !== false) await out.usage(tokens);
  await out.done();
}

async function streamFailure(
  b: Extract<Behavior, { kind: 'cut' | 'malformed' | 'stream-error' | 'stall' | 'truncated' }>,
  request: any,
  res: ServerResponse,
): Promise<void> {
  const out = new EventWriter(res, request);
  await out.chunk({ role: 'assistant', content: '', refusal: null });
  for (let i = 0; i < (b.afterChunks ?? 2); i++) await out.chunk({ content: `part${i} ` });
  switch (b.kind) {
    case 'cut':
      res.socket?.destroy();
      return;
    case 'malformed':
      await out.write('data: {"id": "chatcmpl-broken", "choices": [{\n\n');
      return out.done();
    case 'stall':
      return; // the connection stays open, silent, until the client gives up
    case 'truncated':
      res.end();
      return;
    case 'stream-error':
      await out.data({
        error: {
          message: b.message ?? 'The server had an error while processing your request.',
          type: 'server_error',
          param: null,
          code: b.code ?? null,
        },
      });
      res.end();
  }
}

/** An enormous answer, written with backpressure so the mock itself stays small. */
async function hugeReply(b: Extract<Behavior, { kind: 'huge' }>, request: any, res: ServerResponse): Promise<void> {
  const size = b.chunkBytes ?? 64 * 1024;
  const piece = 'x'.repeat(size - 1) + ' ';
  const pieces = Math.ceil(b.bytes / size);
  const write = (text: string) =>
    new Promise<void>((resolve) => {
      if (res.destroyed || res.write(text)) return resolve();
      const done = () => {
        res.off('drain', done).off('close', done);
        resolve();
      };
      res.on('drain', done).on('close', done);
    });
  if (!request.stream) {
    const [head, tail] = JSON.stringify(completion({ kind: 'ok', content: '@@', usage: false }, request)).split(
      '@@',
    ) as [string, string];
    const length = b.chunked ? {} : { 'content-length': String(head.length + pieces * size + tail.length) };
    res.writeHead(200, { 'content-type': 'application/json', ...length });
    await write(head);
    for (let i = 0; i < pieces && !res.destroyed; i++) await write(piece);
    if (!res.destroyed) res.end(tail);
    return;
  }
  const out = new EventWriter(res, { ...request, stream_options: undefined });
  await out.chunk({ role: 'assistant', content: '', refusal: null });
  for (let i = 0; i < pieces && !out.gone; i++) await out.chunk({ content: piece });
  if (out.gone) return;
  await out.chunk({}, 'stop');
  await out.done();
}
