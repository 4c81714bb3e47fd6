/**
 * The API reference in Markdown (`tollgate openapi --markdown`), rendered from the OpenAPI document: every
 * operation with its parameters, request body fields and responses, then every component schema's fields.
 * Only the parts of OpenAPI that ./openapi.ts writes are read.
 */
interface Schema {
  $ref?: string;
  description?: string;
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  const?: unknown;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
}

type Content = Record<string, { schema?: Schema }>;

interface Operation {
  summary: string;
  security?: unknown[];
  parameters?: Array<{ name: string; in: string; description?: string; schema?: Schema }>;
  requestBody?: { content?: Content };
  responses: Record<string, { description: string; content?: Content }>;
}

interface OpenApiDocument {
  openapi: string;
  info: { version: string };
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
}

/** `document` is the one ./openapi.ts makes (or the same served in JSON). */
export function renderReference(document: unknown): string {
  const doc = document as OpenApiDocument;
  const out: string[] = [
    '# API reference',
    '',
    `Generated from the OpenAPI ${doc.openapi} document that the gateway serves at \`GET /v1/openapi.json\` (tollgate ${doc.info.version}).`,
    'Printed by `npx tollgate openapi --markdown`; do not edit by hand. The decisions behind the API are in docs/api.md.',
    '',
  ];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) out.push(...operation(method.toUpperCase(), path, op));
  }
  out.push('## Schemas', '');
  for (const [name, schema] of Object.entries(doc.components.schemas)) {
    out.push(`### ${name}`, '');
    if (schema.description) out.push(schema.description, '');
    out.push(...fields(schema), '');
  }
  return `${out.join('\n').trimEnd()}\n`;
}

function operation(method: string, path: string, op: Operation): string[] {
  const out = [`## ${method} ${path}`, '', op.summary, ''];
  const auth =
    op.security === undefined
      ? 'API key (`Authorization: Bearer tg-...`)'
      : op.security.length === 0
        ? 'none'
        : 'admin token';
  out.push(`Authentication: ${auth}.`, '');
  if (op.parameters?.length) {
    out.push('| Parameter | In | Type | Description |', '|---|---|---|---|');
    for (const p of op.parameters)
      out.push(`| \`${p.name}\` | ${p.in} | ${typeOf(p.schema)} | ${cell(p.description)} |`);
    out.push('');
  }
  const body = op.requestBody?.content?.['application/json']?.schema;
  if (body) out.push('Request body:', '', ...fields(body), '');
  out.push('| Status | Content |', '|---|---|');
  for (const [status, response] of Object.entries(op.responses)) {
    const media = Object.entries(response.content ?? {}).map(([type, content]) => `${type}: ${typeOf(content.schema)}`);
    out.push(`| ${status} | ${cell([response.description, ...media].join('; '))} |`);
  }
  out.push('');
  return out;
}

function fields(schema: Schema): string[] {
  if (schema.$ref) return [`See ${typeOf(schema)}.`];
  if (!schema.properties) return [`${typeOf(schema)}.`];
  const required = new Set<string>(schema.required ?? []);
  const out = ['| Field | Type | Required | Description |', '|---|---|---|---|'];
  for (const [name, property] of Object.entries(schema.properties)) {
    out.push(
      `| \`${name}\` | ${typeOf(property)} | ${required.has(name) ? 'yes' : 'no'} | ${cell(describe(property))} |`,
    );
  }
  return out;
}

function describe(schema: Schema): string {
  const bounds = [
    schema.minimum !== undefined ? `min ${schema.minimum}` : '',
    schema.maximum !== undefined ? `max ${schema.maximum}` : '',
    schema.minLength !== undefined ? `min length ${schema.minLength}` : '',
    schema.maxLength !== undefined ? `max length ${schema.maxLength}` : '',
    schema.minItems !== undefined ? `at least ${schema.minItems} items` : '',
    schema.maxItems !== undefined ? `at most ${schema.maxItems} items` : '',
  ].filter(Boolean);
  return [schema.description ?? '', bounds.length ? `(${bounds.join(', ')})` : ''].filter(Boolean).join(' ');
}

function typeOf(schema: Schema | undefined): string {
  if (!schema) return 'any';
  if (schema.$ref) return `[${schema.$ref.split('/').pop()}](#${String(schema.$ref.split('/').pop()).toLowerCase()})`;
  if (schema.const !== undefined) return `\`${JSON.stringify(schema.const)}\``;
  if (schema.enum) return schema.enum.map((v: unknown) => `\`${String(v)}\``).join(' \\| ');
  if (schema.anyOf) return schema.anyOf.map((s) => typeOf(s)).join(' \\| ');
  if (schema.type === 'array') return `array of ${typeOf(schema.items)}`;
  if (schema.type === 'object' && schema.properties) return `object {${Object.keys(schema.properties).join(', ')}}`;
  return schema.type === undefined ? 'any' : String(schema.type);
}

function cell(text: string | undefined): string {
  return (text ?? '').replaceAll('|', '\\|').replaceAll('\n', ' ');
}
