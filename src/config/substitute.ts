/**
 * `${NAME}` substitution in the configuration file's values, the docker compose way: `${NAME}` takes the
 * variable (an error naming the field when it is unset), `${NAME:-fallback}` falls back when it is unset or empty,
 * and `$${` stands for a literal `${`. A value that is nothing but one reference is YAML-parsed, so
 * `port: ${PORT}` gives a number and `trust_proxy: ${BEHIND_PROXY:-false}` a boolean.
 */
import { parse } from 'yaml';

type Env = Record<string, string | undefined>;

const REFERENCE = /\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;
const WHOLE_REFERENCE = /^\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}$/;

export class SubstitutionError extends Error {}

export function substituteEnv(value: unknown, env: Env, path = ''): unknown {
  if (typeof value === 'string') return substituteString(value, env, path);
  if (Array.isArray(value)) return value.map((item, index) => substituteEnv(item, env, `${path}[${index}]`));
  if (value !== null && typeof value === 'object') return substituteEnvInObject(value, env, path);
  return value;
}

export function substituteEnvInObject(value: object, env: Env, path = ''): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) out[key] = substituteEnv(item, env, path ? `${path}.${key}` : key);
  return out;
}

function substituteString(text: string, env: Env, path: string): unknown {
  if (!text.includes('${')) return text;
  const replaced = text.replace(REFERENCE, (match, name: string | undefined, fallback: string | undefined) => {
    if (match === '$${') return '${';
    const set = env[name!];
    if (fallback !== undefined) return set ? set : fallback;
    if (set === undefined)
      throw new SubstitutionError(
        `${path || '(root)'}: environment variable ${name} is not set (write \${${name}:-default} for a fallback)`,
      );
    return set;
  });
  if (!WHOLE_REFERENCE.test(text)) return replaced;
  const scalar: unknown = parse(replaced);
  return scalar === null || typeof scalar === 'object' ? replaced : scalar;
}
