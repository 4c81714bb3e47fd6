/** The providers have one face: code outside src/providers/ imports only its index.ts. */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));
const PROVIDERS = join(SRC, 'providers');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

describe('src/providers/', () => {
  it('is imported from outside only through its index.ts', () => {
    const offenders: string[] = [];
    let imports = 0;
    for (const file of sourceFiles(SRC)) {
      if (file.startsWith(PROVIDERS + '/')) continue;
      for (const match of readFileSync(file, 'utf8').matchAll(
        /^(?:import|export)\b[^;]*?from\s+'(\.{1,2}\/[^']+)'/gms,
      )) {
        const target = resolve(dirname(file), match[1]!);
        if (!target.startsWith(PROVIDERS + '/')) continue;
        imports += 1;
        if (target !== join(PROVIDERS, 'index.js'))
          offenders.push(`${relative(SRC, file)} -> ${relative(SRC, target)}`);
      }
    }
    expect(imports).toBeGreaterThan(0); // the imports are read at all
    expect(offenders).toEqual([]);
  });
});
