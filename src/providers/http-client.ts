/**
 * The HTTP side every adapter over the network shares: one undici pool per provider, JSON posts, SSE reading with
 * the early-end rules, and UpstreamError for every failure.
 */
import { Pool, type Dispatcher } from 'undici';
import { traceHeaders, tracingEnabled } from '../observability/index.js';
import { answerText, errorText } from './body.js';
import { describeError, httpError, isTimeout, transportError } from './errors.js';
import { UpstreamError, type ProviderCall } from './provider.js';
import { SseReader, type SseEvent } from './sse.js';

/**
 * Upstream connections per provider and process. LLM streams hold a connection for their whole answer (seconds
 * to minutes), so this bounds the concurrent requests to one provider: beyond it requests wait in the pool's
 * queue. 1,024 covers the 1,000 concurrent streams the performance targets name.
 */
export const UPSTREAM_CONNECTIONS = 1_024;

const JSON_TYPE = 'application/json';
const EVENT_STREAM = 'text/event-stream';

export interface HttpClientOptions {
  id: string;
  /** The provider's base URL; request paths are appended to its path. */
  baseUrl: string;
  headers: Record<string, string>;
  connections?: number;
  /** Rewrites an error answer (status and body text) before the generic mapping; Gemini's bad key is a 400. */
  mapError?: (status: number, text: string) => UpstreamError | undefined;
}

/**
 * What a request needs from the call: its abort signal, its timeout, and what goes upstream with it: its request id
 * and any headers of the client's own protocol a native pass-through forwards (`anthropic-beta`).
 */
export type RequestCall = Pick<ProviderCall, 'signal' | 'timeoutMs'> & {
  requestId?: string;
  headers?: Readonly<Record<string, string>> | undefined;
};

export class HttpClient {
  readonly id: string;
  private readonly pool: Pool;
  private readonly basePath: string;
  /** The configured headers in undici's flat name/value list (cheaper for it to walk than an object). */
  private readonly headers: string[];
  private readonly mapError: HttpClientOptions['mapError'];

  constructor(options: HttpClientOptions) {
    this.id = options.id;
    const url = new URL(options.baseUrl);
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.headers = Object.entries(options.headers).flat();
    this.mapError = options.mapError;
    this.pool = new Pool(url.origin, { connections: options.connections ?? UPSTREAM_CONNECTIONS, pipelining: 1 });
  }

  /** POSTs `body` in JSON and returns the answer's JSON. */
  async json(call: RequestCall, path: string, body: unknown): Promise<unknown> {
    const res = await this.send(call, 'POST', path, JSON_TYPE, body);
    let text: string;
    try {
      text = await answerText(this.id, res);
    } catch (err) {
      throw this.fail(call.signal, err);
    }
    try {
      return JSON.parse(text);
    } catch (cause) {
      throw new UpstreamError(
        this.id,
        'protocol',
        `${this.id} answered with a body that is not JSON: ${text.slice(0, 200)}`,
        { cause },
      );
    }
  }

  /** POSTs `body` in JSON asking for server-sent events; the 2xx response is read with `events`. */
  openStream(call: RequestCall, path: string, body: unknown): Promise<Dispatcher.ResponseData> {
    return this.send(call, 'POST', path, EVENT_STREAM, body);
  }

  /**
   * Yields the events of a 2xx SSE answer on arrival. `finished()` tells whether the answer was complete when
   * the upstream closed untidily (then the error is swallowed); otherwise a cut stream is a `protocol` error.
   * `ended()` tells whether the upstream sent its end marker when reading stops: then the rest is drained so the
   * socket goes back to the pool; otherwise the socket is closed.
   */
  async *events(
    res: Dispatcher.ResponseData,
    signal: AbortSignal,
    finished: () => boolean,
    ended?: () => boolean,
  ): AsyncGenerator<SseEvent> {
    const { body } = res;
    const reader = new SseReader(this.id);
    try {
      // destroyOnReturn: false so that the finally below decides between draining and closing.
      for await (const part of body.iterator({ destroyOnReturn: false })) {
        // undici's body yields Buffers (no encoding is set); Readable types them `any`.
        const bytes: unknown = part;
        if (bytes instanceof Uint8Array || typeof bytes === 'string') yield* reader.feed(bytes);
      }
    } catch (err) {
      if (err instanceof UpstreamError || signal.aborted) throw err;
      if (finished()) return;
      if (isTimeout(err)) throw transportError(this.id, err);
      throw new UpstreamError(this.id, 'protocol', `${this.id} stream ended early: ${describeError(err)}`, {
        cause: err,
      });
    } finally {
      if (ended?.()) void body.dump({ limit: Number.MAX_SAFE_INTEGER }).catch(() => {});
      else body.on('error', () => {}).destroy();
    }
  }

  /** GET that must answer 2xx (health probes, `tollgate doctor`). */
  async probe(path: string, signal: AbortSignal, timeoutMs: number): Promise<void> {
    const res = await this.send({ signal, timeoutMs }, 'GET', path, JSON_TYPE);
    await res.body.dump().catch(() => undefined);
  }

  close(): Promise<void> {
    return this.pool.close();
  }

  /** Sends a request and returns the 2xx response; anything else throws UpstreamError (an abort is rethrown intact). */
  private async send(
    call: RequestCall,
    method: 'GET' | 'POST',
    path: string,
    accept: string,
    body?: unknown,
  ): Promise<Dispatcher.ResponseData> {
    // Serialised outside the try: a body that cannot be serialised is our error, not a transport failure.
    const payload = body === undefined ? null : JSON.stringify(body);
    let res: Dispatcher.ResponseData;
    try {
      res = await this.pool.request({
        method,
        path: this.basePath + path,
        headers: requestHeaders(this.headers, accept, call),
        body: payload,
        signal: call.signal,
        headersTimeout: call.timeoutMs,
        bodyTimeout: call.timeoutMs,
      });
    } catch (err) {
      throw this.fail(call.signal, err);
    }
    if (res.statusCode >= 200 && res.statusCode < 300) return res;
    let text: string;
    try {
      text = await errorText(res.body);
    } catch (err) {
      throw this.fail(call.signal, err);
    }
    throw this.mapError?.(res.statusCode, text) ?? httpError(this.id, res.statusCode, text);
  }

  /** An abort by the caller is rethrown intact, so the gateway can tell "client went away" from upstream failures. */
  private fail(signal: AbortSignal, err: unknown): unknown {
    return signal.aborted ? err : transportError(this.id, err);
  }
}

/** The configured headers, `accept`, OpenAI's header for a caller's request id, and `traceparent` when tracing. */
function requestHeaders(base: string[], accept: string, call: RequestCall): string[] {
  const headers = base.concat('accept', accept);
  if (call.requestId) headers.push('x-client-request-id', call.requestId);
  if (call.headers) for (const [name, value] of Object.entries(call.headers)) headers.push(name, value);
  if (tracingEnabled()) for (const [name, value] of Object.entries(traceHeaders())) headers.push(name, value);
  return headers;
}
