/** Tiny guards for values from outside (a parsed body, an upstream's JSON) before their fields are read. */

/** A JSON object (not null, not an array): what a value must be before its fields are read. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
