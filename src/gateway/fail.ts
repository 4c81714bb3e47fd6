/** What happens to an admitted request that got no answer. */
import { GatewayError } from '../errors/index.js';
import { fromUpstream } from '../routing/index.js';
import type { RequestContext } from './deps.js';
import { emitUnsettledError } from './events.js';
import { recordOutcome } from './record.js';

/** An admitted request that got no answer: the hold is released, the failure recorded and told. */
export function failed(context: RequestContext, error: unknown, signal: AbortSignal): GatewayError {
  context.reservation.release();
  const mapped = signal.aborted
    ? new GatewayError('invalid_request', { message: 'The client closed the request' })
    : fromUpstream(error);
  const told = { code: mapped.code, message: mapped.message };
  emitUnsettledError(context, told);
  recordOutcome(context, {
    ok: false,
    status: mapped.status,
    promptTokens: 0,
    completionTokens: 0,
    chargedNano: 0n,
    generationMs: 0,
    error: told,
  });
  return mapped;
}
