/**
 * A request that fails its JSON Schema, in the contract's terms: one wording whichever validator found the fault
 * (the gateway's compiled TypeBox checkers, Fastify's ajv). Each validator's adapter reduces its report to a
 * `SchemaFault` (where, and what the schema there expects); this module words it.
 *
 * The wording (docs/api.md#errors):
 * - the body itself is not an object: `The request body must be a JSON object` (param null);
 * - a required field is absent: `Missing required parameter: 'messages[0].content'.`;
 * - a field the schema does not allow: `Unknown parameter: 'plann'.`;
 * - any other fault (wrong type, value out of range, unknown enum value, bad array item):
 *   `Invalid value for 'model': expected a string.`, the expectation read from the schema at that place.
 */
import { GatewayError } from './index.js';

export interface SchemaFault {
  /** JSON Pointer of the faulty value ('' for the body or query string itself). */
  pointer: string;
  /** `missing`: a required value is absent; `unknown`: a field the schema refuses; `invalid`: anything else. */
  kind: 'missing' | 'unknown' | 'invalid';
  /** The JSON Schema the value failed (for `invalid`). */
  schema?: unknown;
}

export const NOT_AN_OBJECT = 'The request body must be a JSON object';

/** The contract's 400 for a value that fails its schema. */
export function validationError(fault: SchemaFault): GatewayError {
  const param = pointerToParam(fault.pointer);
  if (!param) return new GatewayError('invalid_request', { message: NOT_AN_OBJECT });
  const message =
    fault.kind === 'missing'
      ? `Missing required parameter: '${param}'.`
      : fault.kind === 'unknown'
        ? `Unknown parameter: '${param}'.`
        : `Invalid value for '${param}': expected ${expectation(fault.schema)}.`;
  return new GatewayError('invalid_request', { message, param });
}

/** `/messages/0/role` -> `messages[0].role` */
export function pointerToParam(pointer: string): string {
  return pointer
    .split('/')
    .filter(Boolean)
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce((path, part) => (/^\d+$/.test(part) ? `${path}[${part}]` : path ? `${path}.${part}` : part), '');
}

/** `pointer` extended by one object key. */
export function childPointer(pointer: string, key: string): string {
  return `${pointer}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;
}

/** How deep a pointer goes (`/a/0` is 2). */
export function pointerDepth(pointer: string): number {
  return pointer.split('/').length - 1;
}

type Schema = Record<string, unknown>;

const isSchema = (value: unknown): value is Schema =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The members of a union schema (`anyOf`, `oneOf`), or undefined. */
export function unionMembers(schema: unknown): unknown[] | undefined {
  if (!isSchema(schema)) return undefined;
  const members = schema.anyOf ?? schema.oneOf;
  return Array.isArray(members) ? members : undefined;
}

/**
 * The member of a failed union whose own fault is the one to report, or undefined to report the union itself.
 * Only an object or array member the value's JSON type fits is a candidate (a wrong scalar is better described
 * by the whole union: `expected one of 'none', 'auto', 'required', or an object`); among several, the one whose
 * fault lies deepest (the closest match), the first on a tie. `depth(i)` is the depth of member i's fault.
 */
export function unionMemberToReport(
  union: unknown,
  value: unknown,
  depth: (index: number) => number,
): number | undefined {
  const members = unionMembers(union) ?? [];
  const type = jsonType(value);
  if (type !== 'object' && type !== 'array') return undefined;
  let best: number | undefined;
  let bestDepth = -1;
  members.forEach((member, index) => {
    if (!admits(member, type)) return;
    const at = depth(index);
    if (at > bestDepth) [best, bestDepth] = [index, at];
  });
  return best;
}

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/** Whether a schema's declared type takes values of JSON type `type` (object and array only are asked). */
function admits(schema: unknown, type: string): boolean {
  if (!isSchema(schema)) return false;
  const members = unionMembers(schema);
  if (members) return members.some((member) => admits(member, type));
  const declared = schema.type;
  return Array.isArray(declared) ? declared.includes(type) : declared === type;
}

/** What a schema expects, in words: `a string`, `an integer from 1 to 128`, `one of 'text', 'json_object'`. */
export function expectation(schema: unknown): string {
  if (!isSchema(schema)) return 'a valid value';
  if ('const' in schema) return literal(schema.const);
  if (Array.isArray(schema.enum)) return `one of ${listOf(schema.enum.map(literal))}`;
  const members = unionMembers(schema);
  if (members) {
    const words = [...new Set(members.map(expectation))];
    if (members.every((member) => isSchema(member) && ('const' in member || Array.isArray(member.enum)))) {
      const values = members.flatMap((member) =>
        isSchema(member) && 'const' in member ? [member.const] : ((member as Schema).enum as unknown[]),
      );
      return values.length === 1 ? literal(values[0]) : `one of ${listOf(values.map(literal))}`;
    }
    return words.length === 1 ? words[0]! : listOf(words, 'or');
  }
  const types = Array.isArray(schema.type) ? (schema.type as unknown[]) : [schema.type];
  const words = types.map((type) => typeExpectation(schema, type));
  return words.length === 1 ? words[0]! : listOf(words, 'or');
}

function typeExpectation(schema: Schema, type: unknown): string {
  switch (type) {
    case 'string':
      return `a string${bounds(schema.minLength, schema.maxLength, 'character')}${
        typeof schema.pattern === 'string' ? ` matching /${schema.pattern}/` : ''
      }`;
    case 'integer':
      return `an integer${range(schema)}`;
    case 'number':
      return `a number${range(schema)}`;
    case 'boolean':
      return 'a boolean';
    case 'null':
      return 'null';
    case 'object':
      return 'an object';
    case 'array': {
      const items = isSchema(schema.items) ? plural(schema.items) : undefined;
      return `an array${items ? ` of ${items}` : ''}${bounds(schema.minItems, schema.maxItems, 'item', 'with')}`;
    }
    default:
      return 'a valid value';
  }
}

/** Array items in words, where that is short: `strings`, `integers`, `objects`. */
function plural(items: Schema): string | undefined {
  if ('const' in items || items.enum || unionMembers(items)) return undefined;
  const words: Record<string, string> = {
    string: 'strings',
    integer: 'integers',
    number: 'numbers',
    boolean: 'booleans',
    object: 'objects',
    array: 'arrays',
  };
  return typeof items.type === 'string' ? words[items.type] : undefined;
}

/** ` of at least 3 characters`, ` with 1 to 8 items` */
function bounds(min: unknown, max: unknown, unit: string, preposition = 'of'): string {
  const n = (count: number) => `${count} ${unit}${count === 1 ? '' : 's'}`;
  if (typeof min === 'number' && min > 0 && typeof max === 'number') return ` ${preposition} ${min} to ${n(max)}`;
  if (typeof min === 'number' && min > 0) return ` ${preposition} at least ${n(min)}`;
  if (typeof max === 'number') return ` ${preposition} at most ${n(max)}`;
  return '';
}

function range(schema: Schema): string {
  const { minimum: min, maximum: max, exclusiveMinimum: above, exclusiveMaximum: below } = schema;
  const low = typeof min === 'number' ? min : undefined;
  const high = typeof max === 'number' ? max : undefined;
  if (low !== undefined && high !== undefined) return ` from ${low} to ${high}`;
  const parts: string[] = [];
  if (low !== undefined) parts.push(`of at least ${low}`);
  if (typeof above === 'number') parts.push(`greater than ${above}`);
  if (high !== undefined) parts.push(`of at most ${high}`);
  if (typeof below === 'number') parts.push(`less than ${below}`);
  return parts.length ? ` ${parts.join(' and ')}` : '';
}

function literal(value: unknown): string {
  return typeof value === 'string' ? `'${value}'` : JSON.stringify(value);
}

/** `a, b, or c` (`a, b, c` for a list of values). */
function listOf(words: string[], conjunction?: 'or'): string {
  if (!conjunction || words.length < 2) return words.join(', ');
  if (words.length === 2) return `${words[0]} or ${words[1]}`;
  return `${words.slice(0, -1).join(', ')}, or ${words.at(-1)}`;
}
