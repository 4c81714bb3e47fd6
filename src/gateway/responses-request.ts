/** What a Responses request carries along its two paths (native and through chat), and the ids it answers with. */
import { randomBytes } from 'node:crypto';
import type { ResponseRequest } from '../protocols/openai-responses/index.js';
import type { ResponseStore, StoredResponse } from '../storage/index.js';
import type { Authenticated } from './metered.js';
import type { Answer } from './request.js';

/** A Response as JSON (OpenAI's own, or tollgate's translation), or its stream of typed events. */
export type ResponseResult = Answer<Record<string, unknown>>;

/** An authenticated Responses request. */
export interface ResponseRequestState extends Authenticated {
  body: ResponseRequest;
  /** Where the response ids are bound to their account. */
  store: ResponseStore;
  /** The response `previous_response_id` continues, when it names one. */
  previous?: StoredResponse | undefined;
}

/** A fresh id of OpenAI's shape: `resp_…`, `msg_…`, `fc_…`. */
export function newResponseId(prefix: string): string {
  return `${prefix}_${randomBytes(24).toString('hex')}`;
}
