import { Pool, type Dispatcher } from 'undici';
import {
  UPSTREAM_CONNECTIONS,
  UpstreamError,
  type ChatCompletion,
  type ChatCompletionChunk,
  type ChatRequest,
  type Provider,
  type ProviderCall,
} from '../types.js';
import { answerText, errorText } from '../body.js';
import { headerList, requestHeaders } from '../headers.js';
import { describe, httpError, inBandError, isTimeout, transportError } from './errors.js';
import { parseStreamEvent, sseEvents } from './sse.js';

export { parseStreamEvent, sseEvents } from './sse.js';
export { httpError, readErrorBody } from './errors.js';

export interface OpenAICompatibleOptions {
  id: string;
  /** e.g. `https://api.openai.com/v1`; requests go to `${baseUrl}/chat/completions`. */
  baseUrl: string;
  apiKey?: string;
  headers?: Record<string, string>;
  /** Maximum sockets to the upstream (default 128). */
  connections?: number;
}

export type OpenAICompatibleProvider = Provider & { close(): Promise<void> };

export function createOpenAICompatibleProvider(options: OpenAICompatibleOptions): OpenAICompatibleProvider {
  const { id } = options;
  const url = new URL(options.baseUrl);
  const path = `${url.pathname.replace(/\/+$/, '')}/chat/completions${url.search}`;
  const modelsPath = `${url.pathname.replace(/\/+$/, '')}/models${url.search}`;
  const pool = new Pool(url.origin, { connections: options.connections ?? UPSTREAM_CONNECTIONS, pipelining: 1 });
  const configured: Record<string, string> = { ...options.headers, 'content-type': 'application/json' };
  if (options.apiKey) configured.authorization = `Bearer ${options.apiKey}`;
  const headers = headerList(configured);

  // An abort by the caller is rethrown as-is so the gateway can tell "client went away" from upstream failures.
  const fail = (call: Pick<ProviderCall, 'signal'>, err: unknown): unknown => (call.signal.aborted ? err : transportError(id, err));

  async function send(call: Pick<ProviderCall, 'signal' | 'timeoutMs'> & { requestId?: string }, method: 'GET' | 'POST', target: string, accept: string, body?: ChatRequest): Promise<Dispatcher.ResponseData> {
    // Serialised outside the try: a body that cannot be serialised is our error, not a transport failure.
    const payload = body ? JSON.stringify(body) : null;
    let res: Dispatcher.ResponseData;
    try {
      res = await pool.request({
        method,
        path: target,
        headers: requestHeaders(headers, accept, call.requestId),
        body: payload,
        signal: call.signal,
        headersTimeout: call.timeoutMs,
        bodyTimeout: call.timeoutMs,
      });
    } catch (err) {
      throw fail(call, err);
    }
    if (res.statusCode >= 200 && res.statusCode < 300) return res;
    let text: string;
    try {
      text = await errorText(res.body);
    } catch (err) {
      throw fail(call, err);
    }
    throw httpError(id, res.statusCode, text);
  }
  const post = (call: ProviderCall, body: ChatRequest, accept: string) => send(call, 'POST', path, accept, body);

  /** GET /models: answers 2xx when the server is up and the key is accepted (health probes, `tollgate doctor`). */
  async function probe(signal: AbortSignal): Promise<void> {
    const res = await send({ signal, timeoutMs: 10_000 }, 'GET', modelsPath, 'application/json');
    await res.body.dump().catch(() => undefined);
  }

  async function complete(call: ProviderCall): Promise<ChatCompletion> {
    // One spread (an undefined field is left out of the JSON): object rest is a slow path on every request.
    const res = await post(call, { ...call.body, stream: false, stream_options: undefined }, 'application/json');
    let text: string;
    try {
      text = await answerText(id, res);
    } catch (err) {
      throw fail(call, err);
    }
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (cause) {
      throw new UpstreamError(id, 'protocol', `${id} answered with a body that is not JSON: ${text.slice(0, 200)}`, {
        cause,
      });
    }
    const completion = json as Partial<ChatCompletion> | null;
    if (completion && typeof completion === 'object' && 'error' in completion) throw inBandError(id, completion);
    if (!Array.isArray(completion?.choices) || !completion.choices.every(isChoice)) {
      throw new UpstreamError(id, 'protocol', `${id} answered with JSON that is not a chat completion`);
    }
    return completion as ChatCompletion;
  }

  async function* stream(call: ProviderCall): AsyncGenerator<ChatCompletionChunk> {
    // Usage is always asked for: the gateway meters with it (and hides it from clients that did not ask).
    const streamOptions = { ...call.body.stream_options, include_usage: true };
    const res = await post(call, { ...call.body, stream: true, stream_options: streamOptions }, 'text/event-stream');
    const { body } = res;
    let done = false;
    let finished = false;
    try {
      // destroyOnReturn: false so that a stream ending with [DONE] can give its socket back to the pool.
      for await (const event of sseEvents(body.iterator({ destroyOnReturn: false }), id)) {
        const chunk = parseStreamEvent(id, event);
        if (chunk === 'skip') continue;
        if (chunk === 'done') {
          done = true;
          return;
        }
        if (chunk.usage || chunk.choices.some((choice) => choice.finish_reason)) finished = true;
        yield chunk;
      }
    } catch (err) {
      if (err instanceof UpstreamError || call.signal.aborted) throw err;
      if (finished) return; // the answer is complete; the upstream only closed untidily
      if (isTimeout(err)) throw transportError(id, err);
      throw new UpstreamError(id, 'protocol', `${id} stream ended early: ${describe(err)}`, { cause: err });
    } finally {
      if (done) void body.dump({ limit: Number.MAX_SAFE_INTEGER }).catch(() => {});
      else body.on('error', () => {}).destroy();
    }
    if (!finished) throw new UpstreamError(id, 'protocol', `${id} stream ended early`);
  }

  return { id, complete, stream, probe, close: () => pool.close() };
}

/** A choice the gateway can meter and relay: a message object, and tool calls (if any) that are function calls. */
function isChoice(choice: unknown): boolean {
  const message = (choice as { message?: unknown } | null)?.message;
  if (!message || typeof message !== 'object') return false;
  const calls = (message as { tool_calls?: unknown }).tool_calls;
  if (calls === undefined || calls === null) return true;
  return Array.isArray(calls) && calls.every((call) => !!call && typeof call === 'object' && !!call.function && typeof call.function === 'object');
}
