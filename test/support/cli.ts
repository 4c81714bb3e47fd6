/** Runs the `tollgate` CLI for real, as a child process (through tsx, from the sources). */
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { expect } from 'vitest';

const CLI = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

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
      ['--import', TSX, CLI, ...args],
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
