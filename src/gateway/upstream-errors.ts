import { GatewayError } from '../errors/index.js';
import { redactCredentials, redactForClient } from '../providers/redact.js';
import { UpstreamError } from '../providers/types.js';

/**
 * Upstream failures in the contract's terms: a timeout is 504; a request the upstream rejected as malformed
 * (400, 413, 422) is the client's 400 with the upstream's words, credentials and addresses removed; anything else
 * means the provider failed: 502 with a fixed message naming the provider and the status, because the upstream's
 * text (or a network error's) may name tollgate's upstream credentials or internal addresses. A 404 is ours
 * (wrong upstream model name or base URL in the configuration), so it is a 502 too. The full text stays on the
 * error's `cause` for the server log, credentials removed.
 */
export function toGatewayError(error: unknown): GatewayError {
  if (error instanceof GatewayError) return error;
  // Not the provider's failure but tollgate's own (a bug): said as such, and never counted against the provider.
  if (!(error instanceof UpstreamError)) return new GatewayError('internal_error', { cause: error });
  const provider = `The provider '${error.provider}'`;
  const cause = forTheLog(error);
  if (error.kind === 'timeout') return new GatewayError('upstream_timeout', { message: `${provider} did not answer in time`, cause });
  if (error.kind === 'connection') return new GatewayError('upstream_error', { message: `${provider} could not be reached`, cause });
  if (error.kind === 'protocol') {
    return new GatewayError('upstream_error', { message: `${provider} sent an answer tollgate cannot use: ${redactForClient(error.message)}`, cause });
  }
  if (error.status !== undefined && [400, 413, 422].includes(error.status)) {
    return new GatewayError('invalid_request', { message: `${provider} rejected the request: ${redactForClient(error.message)}`, param: error.param, cause });
  }
  return new GatewayError('upstream_error', { message: `${provider} failed with status ${error.status ?? 'unknown'}`, cause });
}

/** The upstream error as the server log may keep it: every detail but credentials. */
function forTheLog(error: UpstreamError): UpstreamError {
  const message = redactCredentials(error.message);
  if (message === error.message) return error;
  return new UpstreamError(error.provider, error.kind, message, { status: error.status, param: error.param, cause: error.cause });
}
