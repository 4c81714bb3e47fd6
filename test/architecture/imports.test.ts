/** The folder tree is the architecture: imports between the folders of src/ point one way, with no cycle. */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** folder -> folders it imports from (type-only imports included: they are dependencies of the design too). */
function folderGraph(): Map<string, Set<string>> {
  const folderOf = (file: string) => {
    const parts = relative(SRC, file).split('/');
    return parts.length > 1 ? parts[0]! : '(entry)';
  };
  const graph = new Map<string, Set<string>>();
  for (const file of sourceFiles(SRC)) {
    for (const match of readFileSync(file, 'utf8').matchAll(/^(?:import|export)\b[^;]*?from\s+'(\.{1,2}\/[^']+)'/gms)) {
      const from = folderOf(file);
      const to = folderOf(resolve(dirname(file), match[1]!));
      if (from === to) continue;
      if (!graph.has(from)) graph.set(from, new Set());
      graph.get(from)!.add(to);
    }
  }
  return graph;
}

function cycles(graph: Map<string, Set<string>>): string[] {
  const found = new Set<string>();
  const visit = (node: string, path: string[]) => {
    for (const next of graph.get(node) ?? []) {
      const at = path.indexOf(next);
      if (at >= 0) found.add([...path.slice(at), next].join(' -> '));
      else visit(next, [...path, next]);
    }
  };
  for (const node of graph.keys()) visit(node, [node]);
  return [...found];
}

describe('imports between the folders of src/', () => {
  it('form no cycle', () => {
    const graph = folderGraph();
    expect(graph.get('gateway')?.has('billing')).toBe(true); // the graph is read at all
    expect(cycles(graph)).toEqual([]);
  });

  it('keep the core away from the edges: nothing below http/, cli/ and dashboard/ imports them', () => {
    const graph = folderGraph();
    const edges = new Set(['http', 'cli', 'dashboard', '(entry)']);
    const offenders = [...graph]
      .filter(([from]) => !edges.has(from))
      .flatMap(([from, tos]) => [...tos].filter((to) => edges.has(to)).map((to) => `${from} -> ${to}`));
    expect(offenders).toEqual([]);
  });
});
