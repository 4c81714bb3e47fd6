/**
 * Runs the `tollgate` CLI for real, as a child process. The built `dist/cli/main.js` is used when `dist/` is current
 * (as after `npm test`'s build), since compiling the sources with tsx costs seconds per command; otherwise the
 * sources run through tsx, so a run without a build still tests the code as it is.
 */
import { execFile } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { expect } from 'vitest';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));
const DIST = fileURLToPath(new URL('../../dist/', import.meta.url));

/** Whether every `src/**.ts` has a compiled `dist/**.js` at least as new as itself. */
function distIsCurrent(): boolean {
  for (const file of readdirSync(SRC, { encoding: 'utf8', recursive: true })) {
    if (!file.endsWith('.ts') || file.endsWith('.d.ts')) continue;
    const built = statSync(join(DIST, file.replace(/\.ts$/, '.js')), { throwIfNoEntry: false });
    if (!built || built.mtimeMs < statSync(join(SRC, file)).mtimeMs) return false;
  }
  return true;
}

const COMMAND = distIsCurrent()
  ? [join(DIST, 'cli/main.js')]
  : ['--import', pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href, join(SRC, 'cli/main.ts')];

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI in `dataDir` (also its cwd, so no stray tollgate.config.yaml) with only the environment given. */
export function cli(dataDir: string, args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...COMMAND, ...args],
      {
        cwd: dataDir,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? '',
          TOLLGATE_DATA_DIR: dataDir,
          TOLLGATE_LOG_LEVEL: 'silent',
          ...env,
        },
      },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

export async function json(dataDir: string, args: string[], env?: Record<string, string>): Promise<any> {
  const run = await cli(dataDir, [...args, '--json'], env);
  expect(run.stderr).toBe('');
  expect(run.code).toBe(0);
  return JSON.parse(run.stdout);
}
