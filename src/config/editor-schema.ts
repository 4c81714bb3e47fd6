/**
 * The JSON Schema of `tollgate.config.yaml` for editors (yaml-language-server, VS Code): the validator's own schema,
 * with every settings field optional, since the file is merged over the defaults. Entries of lists (`models`,
 * `deployments`) keep their required fields: the file states them in full.
 */
import { ConfigSchema } from './schema.js';

export const EDITOR_SCHEMA_FILE = 'tollgate.config.schema.json';

export function editorSchema(): Record<string, unknown> {
  const plain = JSON.parse(JSON.stringify(ConfigSchema)) as Record<string, unknown>;
  return {
    $schema: 'http://json-schema.org/draft-07/schema#',
    title: 'tollgate.config.yaml',
    description: 'Configuration of the tollgate LLM gateway (docs/configuration.md). Every field is optional.',
    ...optionalOutsideLists(plain),
  };
}

function optionalOutsideLists(schema: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...schema };
  delete out.required;
  if (isSchemaMap(out.properties)) {
    out.properties = Object.fromEntries(
      Object.entries(out.properties).map(([key, value]) => [key, optionalOutsideLists(value)]),
    );
  }
  if (isSchemaMap(out.patternProperties)) {
    out.patternProperties = Object.fromEntries(
      Object.entries(out.patternProperties).map(([key, value]) => [key, optionalOutsideLists(value)]),
    );
  }
  return out;
}

function isSchemaMap(value: unknown): value is Record<string, Record<string, unknown>> {
  return typeof value === 'object' && value !== null;
}
