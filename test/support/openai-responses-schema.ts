/**
 * OpenAI's own schemas of a Response and of its stream events (test/fixtures/openai-responses/schema.json, an
 * extract of openai/openai-openapi), compiled with Ajv for JSON Schema 2020-12 as OpenAPI 3.1 defines them. A stream
 * event is checked against the variant its `type` names, so that a failure says what is wrong with that event.
 */
import { readFileSync } from 'node:fs';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';

const extract: { components: { schemas: Record<string, any> } } = JSON.parse(
  readFileSync(new URL('../fixtures/openai-responses/schema.json', import.meta.url), 'utf8'),
);
const { schemas } = extract.components;
discriminateByType(schemas);

// An unknown keyword fails (one OpenAPI 3.0 keyword such as `nullable` would be ignored otherwise); the checks of
// how a schema is written (required properties it does not define, ...) are OpenAI's business. Formats (`unixtime`,
// `float`, `uri`) are OpenAI's annotations: the types carry the rules.
const ajv = new Ajv2020({
  strictSchema: true,
  strictRequired: false,
  strictTypes: false,
  strictTuples: false,
  allErrors: true,
  validateFormats: false,
});
// The extract keeps the OpenAPI document's layout, so that its `$ref`s resolve as they are.
ajv.addKeyword('components');
ajv.addSchema({ $id: 'openai.json', components: { schemas } });

const compiled = new Map<string, ValidateFunction>();
function validator(name: string): ValidateFunction {
  let check = compiled.get(name);
  if (!check) {
    check = ajv.getSchema(`openai.json#/components/schemas/${name}`);
    if (!check) throw new Error(`OpenAI's extract has no schema ${name}`);
    compiled.set(name, check);
  }
  return check;
}

/** The component of each stream event type: `ResponseStreamEvent`'s variants, by the `type` each allows. */
const EVENT_SCHEMAS = new Map<string, string>(
  (schemas.ResponseStreamEvent.anyOf as Array<{ $ref: string }>).flatMap(({ $ref }) => {
    const name = $ref.split('/').at(-1)!;
    const type = schemas[name]?.properties?.type;
    const values: string[] = type?.enum ?? (type?.const !== undefined ? [type.const] : []);
    return values.map((value) => [value, name] as const);
  }),
);

/** What is wrong with `value` by OpenAI's schema `name` (one line each, with the path), or [] when it conforms. */
export function schemaErrors(name: string, value: unknown): string[] {
  const check = validator(name);
  return check(value) ? [] : (check.errors ?? []).map(describe);
}

/** What is wrong with a Response by OpenAI's `Response` schema. */
export const responseErrors = (response: unknown): string[] => schemaErrors('Response', response);

/** What is wrong with a stream event by the variant of `ResponseStreamEvent` its type names (or the whole union). */
export function streamEventErrors(event: { type?: unknown }): string[] {
  const variant = typeof event.type === 'string' ? EVENT_SCHEMAS.get(event.type) : undefined;
  if (!variant) return [`no stream event of type ${JSON.stringify(event.type)} in OpenAI's schema`];
  return schemaErrors(variant, event).map((error) => `${String(event.type)}: ${error}`);
}

/** The stream event types OpenAI's schema defines. */
export const streamEventTypes = (): string[] => [...EVENT_SCHEMAS.keys()];

function describe(error: ErrorObject): string {
  const params = JSON.stringify(error.params);
  return `${error.instancePath || '/'} ${error.message ?? ''} ${params}`;
}

/**
 * Rewrites each `oneOf` whose branches are told apart by a distinct `type` (OutputItem, a message's content, ...)
 * as "the branch of the value's type" (`if`/`then` per type, and a known type): the verdict is the same, and a
 * failure is told by that branch only, not by every other branch as well.
 */
function discriminateByType(all: Record<string, any>): void {
  const resolve = (schema: any): any =>
    typeof schema?.$ref === 'string' ? all[schema.$ref.split('/').at(-1)] : schema;
  const tagOf = (branch: any): string | undefined => {
    const schema = resolve(branch);
    const parts: any[] = [schema, ...(Array.isArray(schema?.allOf) ? schema.allOf.map(resolve) : [])];
    const tags = parts.flatMap((part): unknown[] => {
      const type = part?.properties?.type;
      return type?.enum ?? (type?.const !== undefined ? [type.const] : []);
    });
    const required = parts.some((part) => Array.isArray(part?.required) && part.required.includes('type'));
    return tags.length === 1 && typeof tags[0] === 'string' && required ? tags[0] : undefined;
  };
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (typeof node !== 'object' || node === null) return;
    const schema = node as Record<string, any>;
    Object.values(schema).forEach(visit);
    if (!Array.isArray(schema.oneOf) || schema.allOf !== undefined) return;
    const tags = schema.oneOf.map(tagOf);
    if (!tags.every((tag: string | undefined) => tag !== undefined) || new Set(tags).size !== tags.length) return;
    schema.allOf = [
      { type: 'object', required: ['type'], properties: { type: { enum: tags } } },
      ...schema.oneOf.map((branch: unknown, i: number) => ({
        if: { properties: { type: { const: tags[i] } } },
        then: branch,
      })),
    ];
    delete schema.oneOf;
  };
  visit(all);
}
