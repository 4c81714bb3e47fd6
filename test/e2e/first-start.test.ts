/**
 * What a new user does: start the built gateway on an empty data directory, read the admin token and key it
 * prints once, and use them. Runs `dist/main.js` (built by `npm test`'s pretest), the file `npm start` runs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../support/databases.js';
import { freePort } from '../support/replicas.js';

const children: ChildProcess[] = [];
const dirs: string[] = [];

afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function start(env: Record<string, string>): {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
} {
  const child = spawn(process.execPath, ['dist/main.js'], {
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', TOLLGATE_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let text = '';
  child.stdout.on('data', (d: Buffer) => (text += d.toString()));
  child.stderr.on('data', (d: Buffer) => (text += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => text, exited };
}

// Start-up takes about 1 s here; the wait only guards against a hang, with room for a machine busy compiling.
async function waitFor(output: () => string, pattern: RegExp, ms = 40_000): Promise<RegExpMatchArray> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const match = output().match(pattern);
    if (match) return match;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${pattern}; output was:\n${output()}`);
}

describe('first start', { timeout: 120_000 }, () => {
  it('prints an admin token and a working first key once, and not again on restart', async () => {
    const dataDir = tempDir();
    dirs.push(dataDir);
    const port = String(await freePort());
    const first = start({ TOLLGATE_DATA_DIR: dataDir, PORT: port });
    await waitFor(first.output, /listening on/);
    const token = (await waitFor(first.output, /Admin token:\s+(tgadm-\S+)/))[1]!;
    const key = (await waitFor(first.output, /API key:\s+(tg-live-[0-9A-Za-z]{32})/))[1]!;

    const client = new OpenAI({ apiKey: key, baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: 'sandbox/echo',
      messages: [{ role: 'user', content: 'Hello' }],
    });
    expect(completion.choices[0]!.message.content).toBe('Hello');

    const account = await fetch(`http://127.0.0.1:${port}/admin/accounts`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(account.status).toBe(200);
    expect(((await account.json()) as any).data[0].balance.credits).toBeLessThan(5);

    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);

    const second = start({ TOLLGATE_DATA_DIR: dataDir, PORT: port });
    await waitFor(second.output, /listening on/);
    expect(second.output()).not.toMatch(/Admin token|tg-live-/);
    const again = await client.chat.completions.create({
      model: 'sandbox/echo',
      messages: [{ role: 'user', content: 'Again' }],
    });
    expect(again.choices[0]!.message.content).toBe('Again');
    second.child.kill('SIGTERM');
    await second.exited;
  });

  it('stops with a message naming the field when the configuration is invalid', async () => {
    const dir = tempDir();
    dirs.push(dir);
    const file = join(dir, 'tollgate.config.yaml');
    writeFileSync(file, 'plans:\n  free:\n    requests_per_minute: lots\n    tokens_per_minute: 10\n');
    const bad = start({ TOLLGATE_DATA_DIR: dir, TOLLGATE_CONFIG: file, PORT: '0' });
    expect(await bad.exited).toBe(1);
    expect(bad.output()).toMatch(/plans\.free\.requests_per_minute/);

    const badPort = start({ TOLLGATE_DATA_DIR: dir, PORT: 'eighty' });
    expect(await badPort.exited).toBe(1);
    expect(badPort.output()).toMatch(/PORT/);
  });
});
