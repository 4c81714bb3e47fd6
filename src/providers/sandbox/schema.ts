/** Deterministic sample values for a JSON schema: the arguments of sandbox tool calls and json_schema replies. */
import { isObject } from '../../wire/index.js';
import { cutToBytes } from './cut.js';

/**
 * A value of the schema's type: strings become `text`, numbers 1, booleans true, enums their first value. The
 * strings share `budget` bytes between them, so a schema with many string fields cannot multiply a long text.
 */
export function sampleValue(schema: unknown, text: string, budget = { bytes: Infinity }): unknown {
  if (!isObject(schema)) return {};
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  if ('const' in schema) return schema.const;
  const variants = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(variants) && variants.length > 0) return sampleValue(variants[0], text, budget);
  const types: unknown[] = Array.isArray(schema.type) ? schema.type : [schema.type];
  const type = types.find((t) => t !== 'null');
  switch (type) {
    case 'string': {
      const piece = cutToBytes(text, budget.bytes);
      budget.bytes -= Buffer.byteLength(piece);
      return piece;
    }
    case 'number':
    case 'integer':
      return 1;
    case 'boolean':
      return true;
    case 'array':
      return [];
    case 'null':
      return null;
    default: {
      const properties = isObject(schema.properties) ? schema.properties : {};
      return Object.fromEntries(
        Object.entries(properties).map(([name, value]) => [name, sampleValue(value, text, budget)]),
      );
    }
  }
}
