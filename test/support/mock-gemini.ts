/**
 * A local server speaking the Gemini API (https://ai.google.dev/api/generate-content): `models/{m}:generateContent`
 * and `:streamGenerateContent?alt=sse` with `x-goog-api-key`. It checks the request shape as the API does (its
 * 400 INVALID_ARGUMENT body when wrong), streams GenerateContentResponse events, and fails in documented ways.
 *
 * Usage as Google bills it (https://ai.google.dev/gemini-api/docs/caching, /docs/thinking): `promptTokenCount` is a
 * quarter of the contents' JSON length, plus CACHED_CONTENT_TOKENS when the request names `cachedContent`, which
 * are reported as `cachedContentTokenCount`; with `implicitCaching`, a prompt whose first 1,024 tokens or more
 * match an earlier prompt's reports the match as cached too. `thoughtsTokenCount` (billed as output, apart from
 * `candidatesTokenCount`) is the behaviour's `thoughts`, else what `generationConfig.thinkingConfig` allows
 * (its `thinkingBudget`, at most THINKING_TOKENS; 0 turns thinking off), else 3.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RecordedRequest } from './mock-openai.js';
import { CACHE_MIN_TOKENS } from './mock-responses.js';

export type GeminiBehavior =
  | {
      kind: 'ok';
      text?: string;
      calls?: Array<{ name: string; args: unknown }>;
      finishReason?: string;
      /** No candidates: the prompt is blocked (promptFeedback.blockReason). */
      blockPrompt?: boolean;
      /** Omit usageMetadata. */
      usage?: false;
      delayMs?: number;
      latencyMs?: number;
      /** Thinking tokens reported (`thoughtsTokenCount`), whatever the request configured. */
      thoughts?: number;
    }
  | { kind: 'error'; status: number; message?: string }
  | { kind: 'cut'; afterChunks?: number }
  | { kind: 'malformed'; afterChunks?: number }
  /** An error object as an SSE event mid-stream (what Google sends when a stream fails after its 200). */
  | { kind: 'stream-error'; afterChunks?: number; status?: number; message?: string }
  | { kind: 'hang' }
  /** Sends exactly this response (an answer the API would never give, to see what tollgate makes of it). */
  | { kind: 'raw'; status?: number; headers?: Record<string, string>; body: string };

export interface MockGemini {
  /** Base URL ending in `/v1beta`. */
  url: string;
  requests: RecordedRequest[];
  setBehavior(behavior: GeminiBehavior): void;
  enqueue(...behaviors: GeminiBehavior[]): void;
  close(): Promise<void>;
}

const STATUS: Record<number, string> = {
  400: 'INVALID_ARGUMENT',
  403: 'PERMISSION_DENIED',
  404: 'NOT_FOUND',
  429: 'RESOURCE_EXHAUSTED',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
  504: 'DEADLINE_EXCEEDED',
};
export const GEMINI_TEXT = 'Hello from the Gemini mock.';
/** Tokens of the context cache a request names by `cachedContent` (created beforehand through cachedContents). */
export const CACHED_CONTENT_TOKENS = 4_096;
/** Thinking tokens when `thinkingConfig` asks for thinking without a budget (dynamic thinking, `-1`). */
export const THINKING_TOKENS = 1_024;
/** Models that sign their function calls and check the signatures: Gemini 3 and later. */
const GEMINI_3 = /gemini-([3-9]|\d\d)/;
const PATH = /^\/v1beta\/models\/([^/:]+):(generateContent|streamGenerateContent)(\?alt=sse)?$/;

export interface MockGeminiOptions {
  apiKey: string;
  /**
   * Gemini's implicit caching (2.5 models): off by default, so that no other test's figures change. On, a prompt
   * whose first 1,024 tokens or more (a token: four characters of the contents' JSON) match an earlier prompt's
   * reports the match as `cachedContentTokenCount`.
   */
  implicitCaching?: boolean;
}

export async function startMockGemini(options: MockGeminiOptions): Promise<MockGemini> {
  const requests: RecordedRequest[] = [];
  /** The prompts seen, for implicit caching. */
  const prompts: string[] | undefined = options.implicitCaching ? [] : undefined;
  const queue: GeminiBehavior[] = [];
  let behavior: GeminiBehavior = { kind: 'ok' };
  /** The thought signatures this server gave its function calls. */
  const signatures = new Set<string>();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    res.on('error', () => {});
    const parts: Buffer[] = [];
    for await (const part of req) parts.push(part as Buffer);
    let body: any;
    try {
      body = parts.length ? JSON.parse(Buffer.concat(parts).toString('utf8')) : undefined;
    } catch {
      body = Buffer.concat(parts).toString('utf8');
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
    if (req.headers['x-goog-api-key'] !== options.apiKey) {
      // What Google answers for a wrong key: a 400, with the reason in the details.
      return json(res, 400, {
        error: {
          code: 400,
          message: 'API key not valid. Please pass a valid API key.',
          status: 'INVALID_ARGUMENT',
          details: [
            {
              '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
              reason: 'API_KEY_INVALID',
              domain: 'googleapis.com',
            },
          ],
        },
      });
    }
    if (req.method === 'GET' && req.url?.startsWith('/v1beta/models'))
      return json(res, 200, { models: [{ name: 'models/gemini-test' }] });
    const embedding = EMBED_PATH.exec(req.url ?? '');
    if (req.method === 'POST' && embedding) {
      const next = queue.shift() ?? behavior;
      if (next.kind !== 'ok') return serve(next, body, embedding[1]!, false, res, record, signatures);
      return embed(body, embedding[1]!, res);
    }
    const match = PATH.exec(req.url ?? '');
    if (req.method !== 'POST' || !match) return error(res, 404, `Method not found: ${req.url}`);
    const streaming = match[2] === 'streamGenerateContent';
    if (streaming && !match[3]) return error(res, 400, 'this mock only streams with alt=sse');
    const problem = validate(body) ?? checkSignatures(body, match[1]!, signatures);
    if (problem) return error(res, 400, problem);
    const cached = prompts ? implicitHit(prompts, JSON.stringify(body.contents)) : 0;
    await serve(queue.shift() ?? behavior, body, match[1]!, streaming, res, record, signatures, cached);
  };
  // Node does not wait for a promise a request handler returns: each request is served on its own.
  const server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1beta`,
    requests,
    setBehavior: (next) => void (behavior = next),
    enqueue: (...next) => void queue.push(...next),
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** Tokens of `text`'s longest prefix in common with an earlier prompt, when there are enough to cache; remembers it. */
function implicitHit(prompts: string[], text: string): number {
  let common = 0;
  for (const seen of prompts) {
    const n = Math.min(seen.length, text.length);
    let i = 0;
    while (i < n && seen.charCodeAt(i) === text.charCodeAt(i)) i++;
    common = Math.max(common, i);
  }
  prompts.push(text);
  const tokens = Math.floor(common / 4);
  return tokens >= CACHE_MIN_TOKENS ? tokens : 0;
}

const EMBED_PATH = /^\/v1beta\/models\/([^/:]+):batchEmbedContents$/;

/**
 * `models/{m}:batchEmbedContents` (https://ai.google.dev/api/embeddings): `requests[]`, each naming the same model
 * as `models/{m}` with `content.parts[].text` and an optional `outputDimensionality` (3,072 by default);
 * answers `{embeddings: [{values}]}`, no usage.
 */
function embed(body: any, model: string, res: ServerResponse): void {
  const requests = body?.requests;
  if (!Array.isArray(requests) || requests.length === 0)
    return error(res, 400, '* BatchEmbedContentsRequest.requests: contains no requests');
  for (const [i, request] of requests.entries()) {
    if (request?.model !== `models/${model}`)
      return error(res, 400, `* BatchEmbedContentsRequest.requests[${i}].model: model must match the parent model`);
    const parts = request?.content?.parts;
    if (!Array.isArray(parts) || parts.length === 0 || !parts.every((p: any) => typeof p?.text === 'string'))
      return error(res, 400, `* BatchEmbedContentsRequest.requests[${i}].content: contains no parts`);
  }
  const embeddings = requests.map((request: any) => {
    const text = request.content.parts.map((p: any) => p.text).join('');
    const dimensions = request.outputDimensionality ?? 3072;
    return { values: Array.from({ length: dimensions }, (_, i) => Math.cos(text.length + i)) };
  });
  json(res, 200, { embeddings });
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' }).end(JSON.stringify(body));
}

function error(res: ServerResponse, status: number, message: string): void {
  json(res, status, { error: { code: status, message, status: STATUS[status] ?? 'UNKNOWN' } });
}

const PART_FIELDS = ['text', 'inlineData', 'fileData', 'functionCall', 'functionResponse'];
const GENERATION_FIELDS = new Set([
  'maxOutputTokens',
  'temperature',
  'topP',
  'topK',
  'stopSequences',
  'candidateCount',
  'seed',
  'presencePenalty',
  'frequencyPenalty',
  'responseMimeType',
  'responseSchema',
  'responseJsonSchema',
  'thinkingConfig',
]);

/** The documented shape of a GenerateContentRequest; the message of the first violation. */
export function validate(body: any): string | undefined {
  if (typeof body !== 'object' || body === null) return 'Invalid JSON payload received.';
  const allowed = new Set([
    'contents',
    'systemInstruction',
    'tools',
    'toolConfig',
    'generationConfig',
    'safetySettings',
    'cachedContent',
  ]);
  for (const key of Object.keys(body))
    if (!allowed.has(key)) return `Invalid JSON payload received. Unknown name "${key}": Cannot find field.`;
  if (!Array.isArray(body.contents) || body.contents.length === 0)
    return '* GenerateContentRequest.contents: contents is not specified';
  for (const [i, content] of body.contents.entries()) {
    if (content.role !== 'user' && content.role !== 'model')
      return `contents[${i}].role: Please use a valid role: user, model.`;
    if (!Array.isArray(content.parts) || content.parts.length === 0) return `contents[${i}].parts: must not be empty`;
    for (const part of content.parts) {
      const fields = Object.keys(part).filter((k) => PART_FIELDS.includes(k));
      const others = Object.keys(part).filter((k) => !PART_FIELDS.includes(k));
      if (fields.length !== 1) return `contents[${i}].parts: each part holds exactly one data field`;
      if (others.some((k) => k !== 'thought' && k !== 'thoughtSignature'))
        return `Invalid JSON payload received. Unknown name "${others[0]}" at 'contents[${i}].parts'`;
      if (part.thoughtSignature !== undefined && typeof part.thoughtSignature !== 'string')
        return 'thoughtSignature: must be a base64 string';
      if (
        part.inlineData &&
        !(typeof part.inlineData.mimeType === 'string' && typeof part.inlineData.data === 'string')
      )
        return 'inlineData: mimeType and data required';
      if (
        part.functionResponse &&
        (typeof part.functionResponse.name !== 'string' || typeof part.functionResponse.response !== 'object')
      )
        return 'functionResponse: name and object response required';
    }
  }
  if (body.systemInstruction && !body.systemInstruction.parts?.every((p: any) => typeof p.text === 'string'))
    return 'systemInstruction: text parts only';
  for (const key of Object.keys(body.generationConfig ?? {}))
    if (!GENERATION_FIELDS.has(key))
      return `Invalid JSON payload received. Unknown name "${key}" at 'generation_config'`;
  if (body.cachedContent !== undefined && !/^cachedContents\/[^/]+$/.test(String(body.cachedContent)))
    return 'cachedContent: must be of the form cachedContents/{id}';
  for (const tool of body.tools ?? []) {
    if (!Array.isArray(tool.functionDeclarations)) return 'tools: functionDeclarations expected';
    for (const fn of tool.functionDeclarations)
      if (typeof fn.name !== 'string') return 'functionDeclarations.name: required';
  }
  const mode = body.toolConfig?.functionCallingConfig?.mode;
  if (mode !== undefined && !['AUTO', 'ANY', 'NONE', 'VALIDATED'].includes(mode))
    return 'functionCallingConfig.mode: invalid';
  return undefined;
}

/**
 * Gemini 3's check: the first function call of each model turn must carry the signature it was given (or the
 * documented sentinel for calls Gemini did not make). Earlier models do not check.
 */
export function checkSignatures(body: any, model: string, issued: ReadonlySet<string>): string | undefined {
  if (!GEMINI_3.test(model)) return undefined;
  for (const [i, content] of body.contents.entries()) {
    const call = content.role === 'model' ? content.parts.find((p: any) => p.functionCall) : undefined;
    if (!call) continue;
    const signature = call.thoughtSignature;
    if (signature === undefined)
      return `Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call \`default_api:${call.functionCall.name}\` , position ${i + 1}.`;
    if (signature !== 'skip_thought_signature_validator' && !issued.has(signature))
      return `Corrupted thought signature.`;
  }
  return undefined;
}

/** Thinking tokens: what `thinkingConfig` allows (its budget, or THINKING_TOKENS when dynamic), else 3. */
function thoughtsOf(config: any): number {
  if (config === undefined || config === null) return 3;
  const budget = config.thinkingBudget;
  if (typeof budget !== 'number' || budget < 0) return THINKING_TOKENS;
  return Math.min(budget, THINKING_TOKENS);
}

async function serve(
  b: GeminiBehavior,
  request: any,
  model: string,
  streaming: boolean,
  res: ServerResponse,
  record: RecordedRequest,
  signatures: Set<string>,
  implicitCached = 0,
): Promise<void> {
  if (b.kind === 'hang') return;
  if (b.kind === 'raw')
    return void res.writeHead(b.status ?? 200, b.headers ?? { 'content-type': 'application/json' }).end(b.body);
  if (b.kind === 'error') return error(res, b.status, b.message ?? `Mock error ${b.status}`);
  if (b.kind === 'ok' && b.latencyMs) await sleep(b.latencyMs);
  const ok =
    b.kind === 'ok' ? b : { kind: 'ok' as const, text: Array.from({ length: 10 }, (_, i) => `part${i} `).join('') };
  const json_ = request.generationConfig?.responseMimeType === 'application/json';
  const text = ok.text ?? (json_ ? '{"answer": "ok", "n": 1}' : GEMINI_TEXT);
  // A named context cache is part of the prompt, billed at the cache price.
  const explicitCached = request.cachedContent !== undefined ? CACHED_CONTENT_TOKENS : 0;
  const promptTokenCount = Math.ceil(JSON.stringify(request.contents).length / 4) + explicitCached;
  const cachedContentTokenCount = explicitCached + implicitCached;
  const words = ok.calls ? [] : (text.match(/\S+\s*/g) ?? []);
  const thoughtsTokenCount = ok.thoughts ?? thoughtsOf(request.generationConfig?.thinkingConfig);
  const usageMetadata = {
    promptTokenCount,
    candidatesTokenCount: words.length + (ok.calls?.length ?? 0) * 5,
    totalTokenCount: 0,
    ...(cachedContentTokenCount ? { cachedContentTokenCount } : {}),
    thoughtsTokenCount,
  };
  usageMetadata.totalTokenCount =
    usageMetadata.promptTokenCount + usageMetadata.candidatesTokenCount + thoughtsTokenCount;
  record.usage = usageMetadata;
  const finishReason = ok.finishReason ?? 'STOP';
  const responseId = `mockresp${Date.now()}`;
  const base = { modelVersion: model, responseId, ...(ok.usage === false ? {} : { usageMetadata }) };
  // Gemini 3 signs the first function call of a step (https://ai.google.dev/gemini-api/docs/thought-signatures).
  const signature = GEMINI_3.test(model)
    ? Buffer.from(`sig-${responseId}-${signatures.size}`).toString('base64')
    : undefined;
  if (signature && ok.calls?.length) signatures.add(signature);
  const callParts = (ok.calls ?? []).map((call, i) => ({
    functionCall: { name: call.name, args: call.args },
    ...(signature && i === 0 ? { thoughtSignature: signature } : {}),
  }));
  if (!streaming) {
    if (ok.blockPrompt) return json(res, 200, { promptFeedback: { blockReason: 'SAFETY' }, ...base });
    const parts = ok.calls ? callParts : [{ text }];
    return json(res, 200, {
      candidates: [{ content: { role: 'model', parts }, finishReason, index: 0, safetyRatings: [] }],
      ...base,
    });
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const send = (data: unknown) =>
    new Promise<void>((resolve) => {
      if (res.destroyed) return resolve();
      record.eventsSent++;
      res.write(`data: ${JSON.stringify(data)}\r\n\r\n`, () => resolve());
    });
  if (ok.blockPrompt) {
    await send({ promptFeedback: { blockReason: 'SAFETY' }, ...base });
    return void res.end();
  }
  const events = ok.calls ? [callParts] : words.map((word) => [{ text: word }]);
  for (const [i, parts] of events.entries()) {
    if (b.kind !== 'ok' && i === (b.afterChunks ?? 3)) {
      if (b.kind === 'cut') return void res.socket?.destroy();
      if (b.kind === 'stream-error') {
        const code = b.status ?? 503;
        await send({
          error: {
            code,
            message: b.message ?? 'The model is overloaded. Please try again later.',
            status: STATUS[code] ?? 'UNKNOWN',
          },
        });
        return void res.end();
      }
      await new Promise((r) => res.write('data: {"candidates": [{"content": {"parts": [{"text": "br\r\n\r\n', r));
      return void res.end();
    }
    if (ok.delayMs) await sleep(ok.delayMs);
    const last = i === events.length - 1;
    // Usage comes on every event (growing); finishReason on the last.
    await send({
      candidates: [{ content: { role: 'model', parts }, index: 0, ...(last ? { finishReason } : {}) }],
      ...(ok.usage === false
        ? {}
        : { usageMetadata: last ? usageMetadata : { promptTokenCount, totalTokenCount: promptTokenCount } }),
      modelVersion: model,
      responseId,
    });
  }
  res.end();
}
