/**
 * The OpenAPI paths of what each request cost, for the key's own account: one request explained, usage exports
 * (JSON or CSV) and the calling key. Any key may read them; a project key sees only its own requests.
 */
import { FORMATS, GROUPINGS } from '../reports/index.js';
import { json, operation, query, ref, type Json } from './openapi-builder.js';
import { CallingKeySchema, GenerationSchema, UsageExportSchema } from './usage-schemas.js';

const DAY = { type: 'string', format: 'date', pattern: '^\\d{4}-\\d{2}-\\d{2}$' };

export function usagePaths(): Json {
  const usage = operation(
    'usage',
    "The account's charged requests of a range of UTC days, one row per request or summed per group, in JSON or CSV (streamed); sums in `cost_nano` equal the ledger's debits exactly. Test keys' requests are not charged and not listed",
    {
      parameters: [
        query('from', DAY, 'First UTC day, `YYYY-MM-DD` (default: the 1st of this month)'),
        query('to', DAY, 'Last UTC day, included (default: today)'),
        query(
          'group_by',
          { type: 'string', enum: [...GROUPINGS] },
          'Sum per UTC day, model, key or endpoint (default: one row per request)',
        ),
        query('format', { type: 'string', enum: [...FORMATS], default: 'json' }, 'JSON, or CSV as a download'),
      ],
      ok: {
        'application/json': { schema: ref(UsageExportSchema) },
        'text/csv': {
          schema: {
            type: 'string',
            description:
              "With `format=csv`: RFC 4180 lines (CRLF), a header row, then one row per request or group with the columns of `UsageRequestRow` or `UsageGroupRow` in their order; `cost` in exact decimal USD, empty for null; text starting with `=`, `+`, `-`, `@` gets a leading `'`",
          },
        },
      },
      errors: [400, 401, 429],
    },
  );
  const ok = (usage.responses as Record<string, Json>)['200']!;
  ok.headers = {
    'Content-Disposition': {
      description: 'With `format=csv`: `attachment; filename="usage-<from>-<to>[-<group_by>].csv"`',
      schema: { type: 'string' },
    },
  };
  return {
    '/v1/generation': {
      get: operation(
        'usage',
        "One request's charge explained: model, provider, endpoint, tokens by kind, cost and the prices applied, latency, how it ended. Only live (charged) requests; a project key sees only its own (404 for any other)",
        {
          parameters: [
            {
              ...query(
                'id',
                { type: 'string', minLength: 1 },
                "The answer's `id`, the request's `x-request-id`, or its ledger entry id (`led_...`); the newest request when an `x-request-id` was reused",
              ),
              required: true,
            },
          ],
          ok: json(GenerationSchema),
          errors: [400, 401, 404, 429],
        },
      ),
    },
    '/v1/usage': { get: usage },
    '/v1/key': {
      get: operation(
        'usage',
        "The calling key: name, permissions, model allow-list, its governance (limit and what it leaves in the period, when it resets, expiry, its own rate limits, allowed addresses, owner), the account's rate limits, its usage today and this month",
        { ok: json(CallingKeySchema), errors: [401, 429] },
      ),
    },
  };
}
