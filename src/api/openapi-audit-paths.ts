/** The OpenAPI path of the audit log (`GET /v1/audit`), for the account's `full` and `management` keys. */
import { json, operation, query, type Json } from './openapi-builder.js';
import { AuditListSchema } from './audit-schemas.js';

export function auditPaths(): Json {
  return {
    '/v1/audit': {
      get: operation(
        'audit',
        "The account's audit log, newest first: who changed which member, role, key, limit, webhook, setting or payment, before and after, when and from which address. `full` and `management` keys only",
        {
          parameters: auditQuery(),
          ok: json(AuditListSchema),
          errors: [400, 401, 403, 429],
        },
      ),
    },
  };
}

/** The audit log's page parameters (src/reports/audit.ts parses them). */
export function auditQuery(): Json[] {
  return [
    query('limit', { type: 'integer', minimum: 1, maximum: 100, default: 50 }, 'Page size'),
    query('after', { type: 'string' }, 'Id of the last entry of the previous page: only older entries'),
    query(
      'action',
      { type: 'string' },
      'Only this action (`key.create`), or every action of a target with a prefix ending in a dot (`webhook.`)',
    ),
  ];
}
