import { GatewayError } from '../errors/index.js';
import { UpstreamError } from '../providers/types.js';

/**
 * Upstream failures in the contract's terms: a timeout is 504; a request the upstream rejected as malformed
 * (400, 413, 422) is the client's 400 with the upstream's words; anything else means the provider failed: 502.
 * A 404 is ours (wrong upstream model name or base URL in the configuration), so it is a 502 too.
 */
export function toGatewayError(error: unknown): GatewayError {
  if (error instanceof GatewayError) return error;
  if (!(error instanceof UpstreamError)) {
    return new GatewayError('upstream_error', { message: `Upstream failure: ${(error as Error)?.message ?? String(error)}`, cause: error });
  }
  if (error.kind === 'timeout') {
    return new GatewayError('upstream_timeout', { message: `The provider ${error.provider} did not answer in time`, cause: error });
  }
  if (error.kind === 'http' && error.status !== undefined && [400, 413, 422].includes(error.status)) {
    return new GatewayError('invalid_request', {
      message: `The provider ${error.provider} rejected the request: ${error.message}`,
      param: error.param,
      cause: error,
    });
  }
  const status = error.status !== undefined ? ` ${error.status}` : '';
  return new GatewayError('upstream_error', { message: `The provider ${error.provider} failed (${error.kind}${status}): ${error.message}`, cause: error });
}
