/**
 * The HTTP side shared by the native adapters (Anthropic, Gemini): one undici pool per provider, JSON posts,
 * SSE reading with the same early-end rules as the OpenAI-compatible adapter, and errors as UpstreamError.
 */
import { Pool, type Dispatcher } from 'undici';
import { answerText, errorText } from './body.js';
import { describe, httpError, isTimeout, transportError } from './openai-compatible/errors.js';
import { headerList, requestHeaders } from './headers.js';
import { sseEvents } from './openai-compatible/sse.js';
import { UPSTREAM_CONNECTIONS, UpstreamError, type ProviderCall } from './types.js';

export interface HttpClientOptions {
  id: string;
  baseUrl: string;
  headers: Record<string, string>;
  connections?: number;
  /** Rewrites an error answer (status and body text) before the generic mapping; Gemini's bad key is a 400. */
  mapError?: (status: number, text: string) => UpstreamError | undefined;
}

export interface SseEvent {
  event?: string | undefined;
  data: string;
}

export class HttpClient {
  readonly id: string;
  private readonly pool: Pool;
  private readonly basePath: string;
  private readonly headers: string[];

  constructor(private readonly options: HttpClientOptions) {
    this.id = options.id;
    const url = new URL(options.baseUrl);
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.headers = headerList(options.headers);
    this.pool = new Pool(url.origin, { connections: options.connections ?? UPSTREAM_CONNECTIONS, pipelining: 1 });
  }

  /** Sends a request and returns the 2xx response; anything else throws UpstreamError (an abort is rethrown as is). */
  async request(call: Pick<ProviderCall, 'signal' | 'timeoutMs'> & { requestId?: string }, method: 'GET' | 'POST', path: string, body?: unknown): Promise<Dispatcher.ResponseData> {
    // Serialised outside the try: a body that cannot be serialised is our error, not a transport failure.
    const payload = body === undefined ? null : JSON.stringify(body);
    let res: Dispatcher.ResponseData;
    try {
      res = await this.pool.request({
        method,
        path: this.basePath + path,
        headers: requestHeaders(this.headers, path.includes('alt=sse') || (body as { stream?: boolean })?.stream ? 'text/event-stream' : 'application/json', call.requestId),
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
    throw this.options.mapError?.(res.statusCode, text) ?? httpError(this.id, res.statusCode, text);
  }

  async json(call: Pick<ProviderCall, 'signal' | 'timeoutMs'>, path: string, body: unknown): Promise<unknown> {
    const res = await this.request(call, 'POST', path, body);
    let text: string;
    try {
      text = await answerText(this.id, res);
    } catch (err) {
      throw this.fail(call.signal, err);
    }
    try {
      return JSON.parse(text);
    } catch (cause) {
      throw new UpstreamError(this.id, 'protocol', `${this.id} answered with a body that is not JSON: ${text.slice(0, 200)}`, { cause });
    }
  }

  /**
   * Yields the events of a 2xx SSE answer as they arrive. `finished()` tells whether the answer was complete when
   * the upstream closed untidily (then the error is swallowed); otherwise a cut stream is a `protocol` error.
   */
  async *events(res: Dispatcher.ResponseData, signal: AbortSignal, finished: () => boolean): AsyncGenerator<SseEvent> {
    const { body } = res;
    try {
      yield* sseEvents(body.iterator({ destroyOnReturn: false }), this.id);
    } catch (err) {
      if (err instanceof UpstreamError || signal.aborted) throw err;
      if (finished()) return;
      if (isTimeout(err)) throw transportError(this.id, err);
      throw new UpstreamError(this.id, 'protocol', `${this.id} stream ended early: ${describe(err)}`, { cause: err });
    } finally {
      body.on('error', () => {}).destroy();
    }
  }

  /** GET that must answer 2xx (health probes). */
  async probe(path: string, signal: AbortSignal, timeoutMs: number): Promise<void> {
    const res = await this.request({ signal, timeoutMs }, 'GET', path);
    await res.body.dump().catch(() => undefined);
  }

  close(): Promise<void> {
    return this.pool.close();
  }

  private fail(signal: AbortSignal, err: unknown): unknown {
    return signal.aborted ? err : transportError(this.id, err);
  }
}

/** Reads `data:image/png;base64,....` into its media type and base64 data; undefined for other URLs. */
export function parseDataUrl(url: string): { mediaType: string; data: string } | undefined {
  const match = /^data:([^;,]+)(?:;[^,]*)?;base64,(.*)$/s.exec(url);
  return match ? { mediaType: match[1]!, data: match[2]! } : undefined;
}

/** Media type from a URL's file extension (providers that fetch images by URL want one). */
export function mediaTypeOf(url: string): string {
  const ext = /\.([a-z0-9]+)(?:[?#]|$)/i.exec(url)?.[1]?.toLowerCase();
  return ext === 'png' ? 'image/png' : ext === 'gif' ? 'image/gif' : ext === 'webp' ? 'image/webp' : 'image/jpeg';
}

export function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map((part) => (part && typeof part === 'object' && (part as { type?: unknown }).type === 'text' ? String((part as { text?: unknown }).text ?? '') : '')).join('');
}

/** A request the adapter cannot express in the provider's format: the client's 400, never retried. */
export function unsupported(provider: string, message: string, param: string | null = null): UpstreamError {
  return new UpstreamError(provider, 'http', message, { status: 400, param });
}
