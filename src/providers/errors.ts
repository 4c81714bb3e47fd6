/** UpstreamError from upstream failures: transport failures of undici, and error bodies in OpenAI's envelope. */
import { UpstreamError } from './provider.js';
import { isObject } from '../wire/index.js';

const TIMEOUT_CODES = new Set([
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'ETIMEDOUT',
]);

function errorCode(err: unknown): string | undefined {
  const code = typeof err === 'object' && err !== null && 'code' in err ? err.code : undefined;
  return typeof code === 'string' ? code : undefined;
}

export function isTimeout(err: unknown): boolean {
  return TIMEOUT_CODES.has(errorCode(err) ?? '');
}

export function describeError(err: unknown): string {
  // Node reports a refused connection to a dual-stack host by an AggregateError with an empty message.
  return (err instanceof Error && err.message) || errorCode(err) || String(err);
}

/** Maps a failure of undici (connect, headers, socket) to an UpstreamError. */
export function transportError(provider: string, err: unknown): UpstreamError {
  if (err instanceof UpstreamError) return err;
  if (isTimeout(err)) {
    return new UpstreamError(provider, 'timeout', `${provider} did not answer in time: ${describeError(err)}`, {
      cause: err,
    });
  }
  return new UpstreamError(provider, 'connection', `could not reach ${provider}: ${describeError(err)}`, {
    cause: err,
  });
}

interface ErrorDetails {
  message: string | undefined;
  param: string | null;
  code: unknown;
}

/**
 * Reads an error body: OpenAI's envelope `{"error":{"message","type","param","code"}}`, `{"error":"text"}`
 * (Ollama), `{"message":"text"}` or `{"detail":"text"}` (FastAPI servers). Undefined when it is none of these.
 */
export function readErrorBody(json: unknown): ErrorDetails | undefined {
  if (!isObject(json)) return undefined;
  const { error } = json;
  if (typeof error === 'string') return { message: error, param: null, code: undefined };
  if (isObject(error)) {
    return {
      message: typeof error.message === 'string' ? error.message : undefined,
      param: typeof error.param === 'string' ? error.param : null,
      code: error.code,
    };
  }
  const message =
    typeof json.message === 'string' ? json.message : typeof json.detail === 'string' ? json.detail : undefined;
  return message === undefined ? undefined : { message, param: null, code: undefined };
}

/** The error for a non-2xx answer, from its body text (JSON or not). */
export function httpError(provider: string, status: number, text: string): UpstreamError {
  let details: ErrorDetails | undefined;
  try {
    details = readErrorBody(JSON.parse(text));
  } catch {
    // not JSON: fall back to the text itself
  }
  const message = details?.message ?? text.slice(0, 500).trim();
  return new UpstreamError(provider, 'http', message || `${provider} answered HTTP ${status}`, {
    status,
    param: details?.param ?? null,
  });
}

/** The error for an error reported inside a 200 answer (a stream event or a JSON body with `error`). */
export function inBandError(provider: string, json: unknown): UpstreamError {
  const details = readErrorBody(json);
  const code = Number(details?.code);
  const status = Number.isInteger(code) && code >= 400 && code <= 599 ? code : 502;
  return new UpstreamError(provider, 'http', details?.message || `${provider} reported an error`, {
    status,
    param: details?.param ?? null,
  });
}
