/**
 * The folder tree is the architecture: imports between the folders of src/ point one way, with no cycle; and no
 * two files of src/ import each other, directly or around a loop, type-only imports included.
 */
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

/**
 * The relative imports of one file, as absolute paths of .ts files: `import … from`, `import type … from`,
 * `export … from` and bare `import '…'` (type-only imports included: they are dependencies of the design too).
 * `await import('…')` is left out: it loads its module lazily, when it runs, the way a CLI command loads its code.
 */
function importsOf(file: string): string[] {
  const source = readFileSync(file, 'utf8');
  return [...source.matchAll(/^(?:(?:import|export)\b[^;]*?from\s+|import\s+)'(\.{1,2}\/[^']+)'/gms)].map((match) =>
    resolve(dirname(file), match[1]!).replace(/\.js$/, '.ts'),
  );
}

/** folder -> folders it imports from. */
function folderGraph(): Map<string, Set<string>> {
  const folderOf = (file: string) => {
    const parts = relative(SRC, file).split('/');
    return parts.length > 1 ? parts[0]! : '(entry)';
  };
  const graph = new Map<string, Set<string>>();
  for (const file of sourceFiles(SRC)) {
    for (const target of importsOf(file)) {
      const from = folderOf(file);
      const to = folderOf(target);
      if (from === to) continue;
      if (!graph.has(from)) graph.set(from, new Set());
      graph.get(from)!.add(to);
    }
  }
  return graph;
}

/** file -> files it imports, both relative to src/. */
function fileGraph(): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>();
  for (const file of sourceFiles(SRC))
    graph.set(relative(SRC, file), new Set(importsOf(file).map((to) => relative(SRC, to))));
  return graph;
}

/**
 * The groups of files that reach each other through imports (the strongly connected components with more than
 * one file, or a file importing itself), each sorted, by Tarjan's algorithm.
 */
function tangles(graph: Map<string, Set<string>>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const connect = (node: string) => {
    index.set(node, counter);
    low.set(node, counter);
    counter += 1;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!graph.has(next)) continue;
      if (!index.has(next)) {
        connect(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const group: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      group.push(member);
    } while (member !== node);
    if (group.length > 1 || graph.get(node)!.has(node)) found.push(group.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) connect(node);
  return found;
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

  it('form no cycle between files, type-only imports included', () => {
    const graph = fileGraph();
    expect(graph.get('storage/webhooks.ts')?.has('storage/schema.ts')).toBe(true); // the graph is read at all
    expect(tangles(graph)).toEqual([]);
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
