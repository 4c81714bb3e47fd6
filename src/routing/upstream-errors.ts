/**
 * What an upstream failure means, in one place: whether routing tries again (here, or at the next deployment),
 * and what the client is told. Only an UpstreamError is the provider's; any other error (a GatewayError, a
 * TypeError or RangeError of tollgate's own code building the request or reading the answer) stops the request,
 * never counts against a deployment's circuit, and is said to be tollgate's.
 */
import { GatewayError, messageOf } from '../errors/index.js';
import { UpstreamError, redactCredentials, redactForClient } from '../providers/index.js';

export type Verdict = 'retry' | 'next' | 'stop';

/** Statuses by which an upstream calls the request itself malformed: another provider would reject it too. */
const REJECTED_REQUEST = new Set([400, 413, 422]);

function rejectedRequest(error: UpstreamError): boolean {
  return error.kind === 'http' && error.status !== undefined && REJECTED_REQUEST.has(error.status);
}

/**
 * Retryable: connection errors, timeouts, broken answers, 429 and 5xx (Anthropic's 529 included). A rejected
 * request stops everything. 401/403/404 are this deployment's configuration: no retry, but the next may work.
 */
export function verdict(error: unknown): Verdict {
  if (!(error instanceof UpstreamError)) return 'stop';
  if (error.kind !== 'http' || error.status === undefined) return 'retry';
  if (error.status === 429 || error.status >= 500) return 'retry';
  return rejectedRequest(error) ? 'stop' : 'next';
}

/** Short text for breaker reasons, which clients see in a model's status: without credentials or addresses. */
export function reasonOf(error: unknown): string {
  if (error instanceof UpstreamError) {
    const what = error.kind === 'http' ? `HTTP ${error.status}` : error.kind;
    return redactForClient(`${what}: ${error.message}`).slice(0, 200);
  }
  return redactForClient(messageOf(error)).slice(0, 200);
}

/**
 * An upstream failure in the contract's terms: a timeout is 504; a rejected request is the client's 400 with the
 * upstream's words, credentials and addresses removed; anything else means the provider failed: 502 with a fixed
 * message naming the provider and the status, because the upstream's text (or a network error's) may name
 * tollgate's upstream credentials or internal addresses. A 404 is ours (wrong upstream model name or base URL in
 * the configuration), so it is a 502 too. The full text stays on the error's `cause` for the server log,
 * credentials removed.
 */
export function fromUpstream(error: unknown): GatewayError {
  if (error instanceof GatewayError) return error;
  if (!(error instanceof UpstreamError)) return new GatewayError('internal_error', { cause: error });
  const provider = `The provider '${error.provider}'`;
  const cause = forTheLog(error);
  if (error.kind === 'timeout')
    return new GatewayError('upstream_timeout', { message: `${provider} did not answer in time`, cause });
  if (error.kind === 'connection')
    return new GatewayError('upstream_error', { message: `${provider} could not be reached`, cause });
  if (error.kind === 'protocol') {
    return new GatewayError('upstream_error', {
      message: `${provider} sent an answer tollgate cannot use: ${redactForClient(error.message)}`,
      cause,
    });
  }
  if (rejectedRequest(error)) {
    return new GatewayError('invalid_request', {
      message: `${provider} rejected the request: ${redactForClient(error.message)}`,
      param: error.param,
      cause,
    });
  }
  return new GatewayError('upstream_error', {
    message: `${provider} failed with status ${error.status ?? 'unknown'}`,
    cause,
  });
}

/** The upstream error the server log may keep: every detail but credentials. */
function forTheLog(error: UpstreamError): UpstreamError {
  const message = redactCredentials(error.message);
  if (message === error.message) return error;
  return new UpstreamError(error.provider, error.kind, message, {
    status: error.status,
    param: error.param,
    cause: error.cause,
  });
}
