/**
 * The default log destination (stdout) gathers lines for LOG_FLUSH_MS and writes them together: every line must
 * still reach stdout, in order, whether the process goes on, exits at once, or dies of an uncaught exception.
 */
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const LOGGER = join(ROOT, 'dist', 'observability', 'logger.js');

function run(script: string): { stdout: string; status: number | null } {
  const child = spawnSync(
    process.execPath,
    ['--input-type=module', '-e', `import { createLogger } from ${JSON.stringify(LOGGER)};\n${script}`],
    { encoding: 'utf8' },
  );
  return { stdout: child.stdout, status: child.status };
}

const messages = (stdout: string) =>
  stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line).msg);

describe('stdout logs', () => {
  it('writes every line in order across turns', () => {
    const { stdout } = run(`const log = createLogger('info');
      for (let i = 0; i < 3; i++) log.info('a' + i);
      setTimeout(() => { log.info('b0'); log.info('b1'); }, 10);`);
    expect(messages(stdout)).toEqual(['a0', 'a1', 'a2', 'b0', 'b1']);
  });

  it('writes the lines of the last turn when the process exits in it', () => {
    const { stdout, status } = run(`const log = createLogger('info');
      log.info('first'); log.info('second'); process.exit(3);`);
    expect(status).toBe(3);
    expect(messages(stdout)).toEqual(['first', 'second']);
  });

  it('writes the lines logged before an uncaught exception', () => {
    const { stdout, status } = run(`const log = createLogger('info');
      log.error('about to fail'); throw new Error('boom');`);
    expect(status).toBe(1);
    expect(messages(stdout)).toEqual(['about to fail']);
  });

  it('writes the lines of several turns within a few milliseconds in one write', async () => {
    const child = spawn(process.execPath, [
      '--input-type=module',
      '-e',
      `import { createLogger } from ${JSON.stringify(LOGGER)};
      const log = createLogger('info');
      log.info('a');
      setImmediate(() => log.info('b'));
      setTimeout(() => log.info('c'), 5);
      setTimeout(() => {}, 300);`,
    ]);
    const reads: string[] = [];
    child.stdout.on('data', (part: Buffer) => reads.push(part.toString()));
    await new Promise((resolve) => child.once('exit', resolve));
    expect(messages(reads.join(''))).toEqual(['a', 'b', 'c']);
    // One write of three lines (one per turn would be three reads: 'c' comes 5 ms after the others).
    expect(reads).toHaveLength(1);
  });
});
