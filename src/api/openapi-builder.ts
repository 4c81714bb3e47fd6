/**
 * The pieces the OpenAPI document is built from: an operation with its responses (every error answers with the
 * `Error` component), content, parameters, and TypeBox schemas turned into plain JSON with `$ref`s to components.
 */
import type { TSchema } from '@sinclair/typebox';
import { ChatRequestSchema, isObject } from '../wire/index.js';

export type Json = Record<string, unknown>;

const ERRORS: Record<number, string> = {
  400: 'Invalid request (`param` names the field), or context_length_exceeded',
  401: 'missing_api_key or invalid_api_key',
  402: 'insufficient_credits',
  403: 'permission_denied: the key may not do this',
  404: 'model_not_found, or not_found',
  409: 'idempotency_key_in_use: a request with this Idempotency-Key is still running (Retry-After: 1)',
  413: 'request_too_large',
  422: 'idempotency_key_reused: the Idempotency-Key was used with a different request',
  429: 'rate_limit_exceeded or daily_limit_exceeded, with `retry_after` and the Retry-After header',
  502: 'upstream_error: every provider for the model failed (purchases: Stripe failed)',
  503: 'model_unavailable or service_unavailable',
  504: 'upstream_timeout',
};

export interface OperationSpec {
  parameters?: Json[];
  body?: TSchema;
  ok: Json;
  okStatus?: number;
  errors: number[];
  security?: Json[];
}

export function operation(tag: string, summary: string, spec: OperationSpec): Json {
  const responses: Json = { [spec.okStatus ?? 200]: { description: 'Success', content: spec.ok } };
  for (const status of spec.errors)
    responses[status] = {
      description: ERRORS[status],
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
    };
  return {
    tags: [tag],
    summary,
    ...(spec.parameters?.length ? { parameters: spec.parameters } : {}),
    ...(spec.body
      ? {
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema:
                  spec.body === ChatRequestSchema
                    ? { $ref: '#/components/schemas/ChatRequest' }
                    : plain(spec.body, false),
              },
            },
          },
        }
      : {}),
    responses,
    ...(spec.security ? { security: spec.security } : {}),
  };
}

export const json = (schema: TSchema): Json => ({ 'application/json': { schema: ref(schema) } });
export const ref = (schema: TSchema): Json =>
  schema.$id ? { $ref: `#/components/schemas/${schema.$id}` } : plain(schema, false);
export const query = (name: string, schema: Json, description: string): Json => ({
  name,
  in: 'query',
  required: false,
  description,
  schema,
});
export const path = (name: string, description: string): Json => ({
  name,
  in: 'path',
  required: true,
  description,
  schema: { type: 'string' },
});

/** The schema in plain JSON; nested schemas with an `$id` become `$ref`s (the root keeps its own when `root`). */
export function plain(schema: TSchema, root: boolean): Json {
  const walk = (value: unknown): unknown =>
    Array.isArray(value) ? value.map(walk) : value !== null && typeof value === 'object' ? object(value, false) : value;
  const object = (value: object, top: boolean): Json => {
    if (!top && '$id' in value && typeof value.$id === 'string') return { $ref: `#/components/schemas/${value.$id}` };
    const out: Json = {};
    for (const [key, item] of Object.entries(value)) if (key !== '$id') out[key] = walk(item);
    return out;
  };
  const copy: unknown = JSON.parse(JSON.stringify(schema));
  return isObject(copy) ? object(copy, root) : {};
}
