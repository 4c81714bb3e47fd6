/**
 * The audit log's shapes (`GET /v1/audit`, as src/reports/audit.ts renders them). Each named schema is a component
 * of the OpenAPI document, listed in `RESPONSE_SCHEMAS` of ./schemas.ts.
 */
import { Type } from '@sinclair/typebox';
import { Nullable, UnixSeconds } from '../wire/index.js';

/** Before or after of a change: the target's fields as they were (never a secret), or null where there was none. */
const State = (description: string) => Type.Unknown({ description });

export const AuditEntrySchema = Type.Object(
  {
    id: Type.String({ description: 'Entry id (`aud_...`); pass it as `after` for the next (older) page' }),
    object: Type.Literal('audit_entry'),
    action: Type.String({ description: '`<target>.<verb>`: `key.create`, `webhook.update`, `member.role`, ...' }),
    actor: Type.Object({
      type: Type.Union(['user', 'key', 'operator', 'processor', 'system'].map((t) => Type.Literal(t))),
      id: Nullable(Type.String({ description: 'The user (`usr_...`) or key id; null for the operator' })),
      email: Nullable(Type.String({ description: "A user's email; null for other actors" })),
    }),
    target: Type.Object({ type: Type.String(), id: Nullable(Type.String()) }),
    before: State('The target before the change; null for a creation'),
    after: State('The target after the change; null for a deletion'),
    ip: Nullable(Type.String({ description: 'The client address the change came from' })),
    created: UnixSeconds,
    created_date: Type.String({ format: 'date-time' }),
  },
  { $id: 'AuditEntry' },
);

export const AuditListSchema = Type.Object(
  {
    object: Type.Literal('list'),
    data: Type.Array(AuditEntrySchema, { description: 'Newest first' }),
    has_more: Type.Boolean({ description: 'Older entries exist: ask again with `after` = the last id' }),
  },
  { $id: 'AuditList' },
);

export const AUDIT_SCHEMAS = [AuditEntrySchema, AuditListSchema];
