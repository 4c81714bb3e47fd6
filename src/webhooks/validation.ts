/**
 * The registration bounds of spec 6.2 in one TypeBox schema; every violation is a 400 whose `param` names the
 * field (`retryConfig.maxAttempts`, `events[0].type`, `headers.X-Foo`).
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { ValueErrorType } from '@sinclair/typebox/errors';
import { invalidRequest } from '../errors/index.js';
import { validationError } from '../errors/validation.js';
import type { RetryConfig, WebhookEventSpec } from '../storage/index.js';
import { DEFAULT_RETRY, DEFAULT_TIMEOUT_MS, expandType } from './types.js';

const FilterValue = Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()]);
const EventSpec = Type.Object(
  {
    type: Type.String({ minLength: 1 }),
    filters: Type.Optional(
      Type.Record(Type.String({ minLength: 1, maxLength: 200 }), FilterValue, { maxProperties: 20 }),
    ),
  },
  { additionalProperties: false },
);
const Retry = Type.Object(
  {
    maxAttempts: Type.Optional(Type.Integer({ minimum: 1, maximum: 10 })),
    initialDelay: Type.Optional(Type.Integer({ minimum: 100, maximum: 10_000 })),
    maxDelay: Type.Optional(Type.Integer({ minimum: 1_000, maximum: 60_000 })),
    backoffMultiplier: Type.Optional(Type.Number({ minimum: 1, maximum: 5 })),
  },
  { additionalProperties: false },
);
const fields = {
  url: Type.String({ minLength: 1, maxLength: 2048 }),
  secret: Type.String({ minLength: 32, maxLength: 512 }),
  events: Type.Array(EventSpec, { minItems: 1, maxItems: 20 }),
  headers: Type.Optional(
    Type.Record(Type.String({ minLength: 1 }), Type.String({ maxLength: 4096 }), { maxProperties: 20 }),
  ),
  timeout: Type.Optional(Type.Integer({ minimum: 1_000, maximum: 30_000 })),
  retryConfig: Type.Optional(Retry),
  description: Type.Optional(Type.Union([Type.String({ maxLength: 500 }), Type.Null()])),
};
export const CreateWebhookSchema = Type.Object(fields, { additionalProperties: false });
export const PatchWebhookSchema = Type.Partial(Type.Object(fields), { additionalProperties: false });

export type CreateWebhookBody = Static<typeof CreateWebhookSchema>;
export type PatchWebhookBody = Static<typeof PatchWebhookSchema>;

export interface WebhookInput {
  url?: URL;
  secret?: string;
  events?: WebhookEventSpec[];
  headers?: Record<string, string>;
  timeoutMs?: number;
  retry?: RetryConfig;
  description?: string | null;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Headers tollgate sets itself: a registration cannot replace them. */
const RESERVED = /^(content-type|content-length|host|transfer-encoding|connection|user-agent|x-webhook-.*)$/i;

export function parseCreate(
  body: unknown,
): Required<Omit<WebhookInput, 'description'>> & Pick<WebhookInput, 'description'> {
  const input = parse(CreateWebhookSchema, body);
  const parsed = normalize(input, undefined);
  return {
    url: parsed.url!,
    secret: input.secret,
    events: parsed.events!,
    headers: parsed.headers ?? {},
    timeoutMs: input.timeout ?? DEFAULT_TIMEOUT_MS,
    retry: parsed.retry ?? { ...DEFAULT_RETRY },
    ...(input.description !== undefined ? { description: input.description } : {}),
  };
}

/** A PATCH: only the fields given change; `retryConfig` fields merge into the current ones. */
export function parsePatch(body: unknown, current: RetryConfig): WebhookInput {
  const input = parse(PatchWebhookSchema, body ?? {});
  const parsed = normalize(input, current);
  if (input.secret !== undefined) parsed.secret = input.secret;
  if (input.timeout !== undefined) parsed.timeoutMs = input.timeout;
  if (input.description !== undefined) parsed.description = input.description;
  return parsed;
}

function normalize(input: PatchWebhookBody, currentRetry: RetryConfig | undefined): WebhookInput {
  const out: WebhookInput = {};
  if (input.url !== undefined) out.url = parseUrl(input.url);
  if (input.events !== undefined) {
    const seen = new Set<string>();
    out.events = input.events.map((spec, i) => {
      if (expandType(spec.type).length === 0)
        throw invalidRequest(`Unknown event type '${spec.type}'`, `events[${i}].type`);
      const key = `${spec.type} ${JSON.stringify(spec.filters ?? {})}`;
      if (seen.has(key))
        throw invalidRequest(`Event '${spec.type}' is listed twice with the same filters`, `events[${i}]`);
      seen.add(key);
      return spec.filters && Object.keys(spec.filters).length
        ? { type: spec.type, filters: spec.filters }
        : { type: spec.type };
    });
  }
  if (input.headers !== undefined) {
    for (const [name, value] of Object.entries(input.headers)) {
      if (!TOKEN.test(name)) throw invalidRequest(`'${name}' is not a valid header name`, `headers.${name}`);
      if (RESERVED.test(name))
        throw invalidRequest(`The header '${name}' is set by tollgate and cannot be replaced`, `headers.${name}`);
      if (/[\r\n\0]/.test(value))
        throw invalidRequest(`The value of header '${name}' contains a line break`, `headers.${name}`);
    }
    out.headers = input.headers;
  }
  if (input.retryConfig !== undefined) out.retry = { ...(currentRetry ?? DEFAULT_RETRY), ...input.retryConfig };
  return out;
}

function parseUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalidRequest(`'url' must be an absolute URI`, 'url');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw invalidRequest(`'url' must use http or https`, 'url');
  return url;
}

function parse<T extends TSchema>(schema: T, body: unknown): Static<T> {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw validationError({ pointer: '', kind: 'invalid' });
  if (Value.Check(schema, body)) return body;
  const first = Value.Errors(schema, body).First();
  if (!first) throw validationError({ pointer: '', kind: 'invalid' });
  const kind =
    first.value === undefined
      ? 'missing'
      : first.type === ValueErrorType.ObjectAdditionalProperties
        ? 'unknown'
        : 'invalid';
  throw validationError({ pointer: first.path, kind, schema: first.schema });
}
