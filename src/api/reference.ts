/**
 * The API reference as Markdown (docs/api-reference.md), rendered from the OpenAPI document: every operation with
 * its parameters, request body fields and responses, then every component schema's fields.
 */
type Json = Record<string, any>;

export function renderReference(doc: Json): string {
  const out: string[] = [
    '# API reference',
    '',
    `Generated from the OpenAPI ${doc.openapi} document that the gateway serves at \`GET /v1/openapi.json\` (tollgate ${doc.info.version}).`,
    'Do not edit by hand: `npx tollgate openapi --markdown > docs/api-reference.md`. The decisions behind it are in [api.md](api.md).',
    '',
  ];
  for (const [path, methods] of Object.entries(doc.paths as Json)) {
    for (const [method, op] of Object.entries(methods as Json)) out.push(...operation(method.toUpperCase(), path, op as Json));
  }
  out.push('## Schemas', '');
  for (const [name, schema] of Object.entries(doc.components.schemas as Json)) {
    out.push(`### ${name}`, '');
    if (schema.description) out.push(schema.description, '');
    out.push(...fields(schema), '');
  }
  return `${out.join('\n').trimEnd()}\n`;
}

function operation(method: string, path: string, op: Json): string[] {
  const out = [`## ${method} ${path}`, '', op.summary, ''];
  const auth = op.security === undefined ? 'API key (`Authorization: Bearer tg-...`)' : op.security.length === 0 ? 'none' : 'admin token';
  out.push(`Authentication: ${auth}.`, '');
  if (op.parameters?.length) {
    out.push('| Parameter | In | Type | Description |', '|---|---|---|---|');
    for (const p of op.parameters) out.push(`| \`${p.name}\` | ${p.in} | ${typeOf(p.schema)} | ${cell(p.description)} |`);
    out.push('');
  }
  const body = op.requestBody?.content?.['application/json']?.schema;
  if (body) out.push('Request body:', '', ...fields(body), '');
  out.push('| Status | Content |', '|---|---|');
  for (const [status, response] of Object.entries(op.responses as Json)) {
    const media = Object.entries((response as Json).content ?? {}).map(([type, content]) => `${type}: ${typeOf((content as Json).schema)}`);
    out.push(`| ${status} | ${cell([(response as Json).description, ...media].join('; '))} |`);
  }
  out.push('');
  return out;
}

function fields(schema: Json): string[] {
  if (schema.$ref) return [`See ${typeOf(schema)}.`];
  if (!schema.properties) return [`${typeOf(schema)}.`];
  const required = new Set<string>(schema.required ?? []);
  const out = ['| Field | Type | Required | Description |', '|---|---|---|---|'];
  for (const [name, property] of Object.entries(schema.properties as Json)) {
    out.push(`| \`${name}\` | ${typeOf(property)} | ${required.has(name) ? 'yes' : 'no'} | ${cell(describe(property))} |`);
  }
  return out;
}

function describe(schema: Json): string {
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

function typeOf(schema: Json | undefined): string {
  if (!schema) return 'any';
  if (schema.$ref) return `[${schema.$ref.split('/').pop()}](#${String(schema.$ref.split('/').pop()).toLowerCase()})`;
  if (schema.const !== undefined) return `\`${JSON.stringify(schema.const)}\``;
  if (schema.enum) return schema.enum.map((v: unknown) => `\`${String(v)}\``).join(' \\| ');
  if (schema.anyOf) return schema.anyOf.map(typeOf).join(' \\| ');
  if (schema.type === 'array') return `array of ${typeOf(schema.items)}`;
  if (schema.type === 'object' && schema.properties) return `object {${Object.keys(schema.properties).join(', ')}}`;
  return schema.type ?? 'any';
}

function cell(text: string | undefined): string {
  return (text ?? '').replaceAll('|', '\\|').replaceAll('\n', ' ');
}
