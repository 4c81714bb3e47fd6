/**
 * The benchmark's upstream: a lean OpenAI chat-completions server, run as its own process so that its CPU and
 * memory can be read from /proc apart from the others. Self-contained (Node built-ins only): `bench/run.ts`
 * compiles it to plain JavaScript and starts it with `node`.
 *
 *   POST /v1/chat/completions   JSON with `usage`, or SSE when `stream` is true: a role chunk, `chunks` content
 *                               chunks each `delay_ms` after the previous one, a finish chunk, the usage chunk
 *                               when `stream_options.include_usage`, then `[DONE]`. `?chunks=&delay_ms=` override.
 *   POST /v1/embeddings         OpenAI's embedding list: one fixed 256-dimension vector per input, with `usage`.
 *   POST /bench/config          {"chunks": n, "delay_ms": n} sets the streaming defaults (a proxy in front drops
 *                               query strings, so this is how the runner shapes streams that go through tollgate).
 *   GET  /bench/stats           {"requests", "streams_open", "streams_open_peak"}; POST /bench/stats/reset.
 *
 * Environment: MOCK_PORT (default 0, the chosen port is sent to the parent over IPC and printed), MOCK_CHUNKS
 * (default 50), MOCK_DELAY_MS (default 0).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

let streamChunks = intEnv('MOCK_CHUNKS', 50);
let streamDelayMs = intEnv('MOCK_DELAY_MS', 0);
let requests = 0;
let streamsOpen = 0;
let streamsOpenPeak = 0;
let counter = 0;

const CONTENT = 'Hello from the benchmark upstream.';
const COMPLETION_TOKENS = 7;

function intEnv(name: string, fallback: number): number {
  const value = process.env[name];
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a whole number, got "${value}"`);
  return n;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () =>
      resolve(parts.length === 1 ? parts[0]!.toString('utf8') : Buffer.concat(parts).toString('utf8')),
    );
    req.on('error', reject);
  });
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendError(res: ServerResponse, status: number, message: string): void {
  sendJson(res, status, { error: { message, type: 'invalid_request_error', param: null, code: null } });
}

interface ChatBody {
  model?: unknown;
  messages?: unknown;
  stream?: unknown;
  stream_options?: { include_usage?: unknown } | null;
}

function promptTokens(body: ChatBody): number {
  return Math.max(1, Math.ceil(JSON.stringify(body.messages ?? []).length / 4));
}

function completion(body: ChatBody) {
  const prompt = promptTokens(body);
  return {
    id: `chatcmpl-bench${++counter}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: body.model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: CONTENT, refusal: null },
        logprobs: null,
        finish_reason: 'stop',
      },
    ],
    usage: { prompt_tokens: prompt, completion_tokens: COMPLETION_TOKENS, total_tokens: prompt + COMPLETION_TOKENS },
    system_fingerprint: 'fp_bench',
  };
}

const VECTOR = Array.from({ length: 256 }, (_, i) => Math.sin(i + 1) / 16);

function embeddings(body: { model?: unknown; input?: unknown }) {
  const inputs = Array.isArray(body.input) ? body.input : [body.input];
  const prompt = Math.max(1, Math.ceil(JSON.stringify(body.input ?? '').length / 4));
  return {
    object: 'list',
    data: inputs.map((_, index) => ({ object: 'embedding', index, embedding: VECTOR })),
    model: body.model,
    usage: { prompt_tokens: prompt, total_tokens: prompt },
  };
}

function stream(body: ChatBody, res: ServerResponse, chunks: number, delayMs: number): void {
  const id = `chatcmpl-bench${++counter}`;
  const created = Math.floor(Date.now() / 1000);
  const includeUsage = body.stream_options?.include_usage === true;
  const chunk = (delta: object, finishReason: string | null = null) =>
    `data: ${JSON.stringify({
      id,
      object: 'chat.completion.chunk',
      created,
      model: body.model,
      system_fingerprint: 'fp_bench',
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
      ...(includeUsage ? { usage: null } : {}),
    })}\n\n`;

  streamsOpen++;
  if (streamsOpen > streamsOpenPeak) streamsOpenPeak = streamsOpen;
  let closed = false;
  res.on('close', () => {
    closed = true;
    streamsOpen--;
  });
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  res.write(chunk({ role: 'assistant', content: '', refusal: null }));

  let sent = 0;
  const finish = () => {
    const prompt = promptTokens(body);
    let tail = chunk({}, 'stop');
    if (includeUsage) {
      tail += `data: ${JSON.stringify({
        id,
        object: 'chat.completion.chunk',
        created,
        model: body.model,
        system_fingerprint: 'fp_bench',
        choices: [],
        usage: { prompt_tokens: prompt, completion_tokens: chunks, total_tokens: prompt + chunks },
      })}\n\n`;
    }
    res.end(`${tail}data: [DONE]\n\n`);
  };
  const next = () => {
    if (closed) return;
    if (sent === chunks) return finish();
    res.write(chunk({ content: `token${sent} ` }));
    sent++;
    if (delayMs > 0) setTimeout(next, delayMs);
    else setImmediate(next);
  };
  if (delayMs > 0) setTimeout(next, delayMs);
  else next();
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = req.url ?? '/';
  const queryAt = url.indexOf('?');
  const path = queryAt === -1 ? url : url.slice(0, queryAt);

  if (req.method === 'POST' && path === '/v1/chat/completions') {
    requests++;
    let body: ChatBody;
    try {
      body = JSON.parse(await readBody(req)) as ChatBody;
    } catch {
      return sendError(res, 400, 'We could not parse the JSON body of your request.');
    }
    if (typeof body !== 'object' || body === null) return sendError(res, 400, 'The body must be a JSON object.');
    if (body.stream !== true) return sendJson(res, 200, completion(body));
    let chunks = streamChunks;
    let delayMs = streamDelayMs;
    if (queryAt !== -1) {
      const query = new URLSearchParams(url.slice(queryAt + 1));
      if (query.has('chunks')) chunks = Number(query.get('chunks'));
      if (query.has('delay_ms')) delayMs = Number(query.get('delay_ms'));
    }
    return stream(body, res, chunks, delayMs);
  }
  if (req.method === 'POST' && path === '/v1/embeddings') {
    requests++;
    let body: { model?: unknown; input?: unknown };
    try {
      body = JSON.parse(await readBody(req)) as { model?: unknown; input?: unknown };
    } catch {
      return sendError(res, 400, 'We could not parse the JSON body of your request.');
    }
    return sendJson(res, 200, embeddings(body));
  }
  if (req.method === 'POST' && path === '/bench/config') {
    const config = JSON.parse((await readBody(req)) || '{}') as { chunks?: number; delay_ms?: number };
    if (config.chunks !== undefined) streamChunks = config.chunks;
    if (config.delay_ms !== undefined) streamDelayMs = config.delay_ms;
    return sendJson(res, 200, { chunks: streamChunks, delay_ms: streamDelayMs });
  }
  if (req.method === 'GET' && path === '/bench/stats') {
    return sendJson(res, 200, { requests, streams_open: streamsOpen, streams_open_peak: streamsOpenPeak });
  }
  if (req.method === 'POST' && path === '/bench/stats/reset') {
    await readBody(req);
    requests = 0;
    streamsOpenPeak = streamsOpen;
    return sendJson(res, 200, { ok: true });
  }
  await readBody(req);
  sendError(res, 404, `Unknown request URL: ${req.method} ${path}.`);
}

const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  res.on('error', () => undefined);
  handle(req, res).catch((error: unknown) => {
    if (!res.headersSent) sendError(res, 500, String(error));
    else res.destroy();
  });
});
server.listen(intEnv('MOCK_PORT', 0), '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`mock upstream listening on http://127.0.0.1:${port}\n`);
  process.send?.({ port });
});
// Started by the runner with an IPC channel: exit with it, so that a killed runner leaves nothing behind.
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
