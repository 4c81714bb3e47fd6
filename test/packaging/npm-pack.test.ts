/**
 * What a user who installs tollgate from a registry gets: `npm pack`, then `npm install ./tollgate-*.tgz` into an
 * empty folder, `npx tollgate start`, a chat request, and the package's exports (`tollgate/webhooks`,
 * `tollgate/api`). Packs the `dist/` that `npm test`'s pretest builds.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../support/databases.js';
import { freePort } from '../support/replicas.js';

const run = promisify(execFile);
const repo = fileURLToPath(new URL('../../', import.meta.url));
let consumer: string;
let server: ChildProcess | undefined;

beforeAll(async () => {
  if (!existsSync(join(repo, 'dist', 'main.js')))
    throw new Error('dist/ is missing: run `npm run build` (npm test does it first)');
  consumer = tempDir('tollgate-consumer-');
  // --ignore-scripts: `prepare` would rebuild dist/ under the other test files that use it.
  await run('npm', ['pack', '--ignore-scripts', '--pack-destination', consumer], { cwd: repo });
  const tarball = readdirSync(consumer).find((file) => /^tollgate-.*\.tgz$/.test(file))!;
  writeFileSync(join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  // better-sqlite3 compiles from source here (no prebuilt binaries reachable), about two minutes: the copy the
  // project already built (with its run-time dependencies) is placed first, and npm keeps it as it satisfies
  // tollgate's range. Everything else, tollgate itself included, npm installs from the tarball's manifest.
  for (const name of ['better-sqlite3', 'bindings', 'file-uri-to-path']) {
    cpSync(join(repo, 'node_modules', name), join(consumer, 'node_modules', name), { recursive: true });
  }
  await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', `./${tarball}`], {
    cwd: consumer,
    timeout: 240_000,
  });
}, 300_000);

afterAll(() => {
  // npx runs tollgate as its own child: the signal goes to the whole process group, or the server outlives the test.
  if (server?.pid) process.kill(-server.pid, 'SIGKILL');
  if (consumer) rmSync(consumer, { recursive: true, force: true });
});

describe('the packed package, installed into an empty folder', { timeout: 120_000 }, () => {
  it('holds the build and not the sources or tests', () => {
    const installed = join(consumer, 'node_modules', 'tollgate');
    expect(existsSync(join(installed, 'dist', 'main.js'))).toBe(true);
    expect(existsSync(join(installed, 'dist', 'web', 'index.html'))).toBe(true);
    expect(existsSync(join(installed, 'tollgate.config.schema.json'))).toBe(true);
    expect(existsSync(join(installed, 'src'))).toBe(false);
    expect(existsSync(join(installed, 'test'))).toBe(false);
  });

  it('`npx tollgate start` serves the sandbox with the first key it prints', async () => {
    const port = String(await freePort());
    server = spawn('npx', ['tollgate', 'start'], {
      detached: true,
      cwd: consumer,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        HOST: '127.0.0.1',
        PORT: port,
        TOLLGATE_LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    server.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    server.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    const until = Date.now() + 60_000;
    while (!/listening on/.test(output) && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    const key = /API key:\s+(tg-live-[0-9A-Za-z]{32})/.exec(output)?.[1];
    expect(key, output).toBeDefined();
    const client = new OpenAI({ apiKey: key!, baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: 'sandbox/echo',
      messages: [{ role: 'user', content: 'from the tarball' }],
    });
    expect(completion.choices[0]!.message.content).toBe('from the tarball');
    expect(existsSync(join(consumer, 'data', 'tollgate.db'))).toBe(true);
    const dashboard = await fetch(`http://127.0.0.1:${port}/dashboard`);
    expect(dashboard.status).toBe(200);
    process.kill(-server.pid!, 'SIGTERM');
    await new Promise((resolve) => server!.once('exit', resolve));
    server = undefined;
  });

  it('exports the webhook receiver library and the API types', async () => {
    const script = [
      "import { signWebhook, verifyWebhook } from 'tollgate/webhooks';",
      "import { openApiDocument } from 'tollgate/api';",
      "const body = JSON.stringify({ id: 'evt_1', timestamp: new Date().toISOString(), event: 'llm.completion', data: { requestId: 'r', prompt: 'p', completion: 'c', model: 'm', userId: 'u' } });",
      "const secret = 's'.repeat(32);",
      'const ok = verifyWebhook(body, signWebhook(body, secret), secret);',
      "const forged = verifyWebhook(body, signWebhook(body, 'x'.repeat(32)), secret);",
      'console.log(JSON.stringify({ ok: ok.ok, forged: forged.ok, openapi: openApiDocument().openapi }));',
    ].join('\n');
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: consumer });
    expect(JSON.parse(stdout)).toEqual({ ok: true, forged: false, openapi: '3.1.0' });
    for (const entry of ['dist/api/index.d.ts', 'dist/webhooks/receiver/index.d.ts', 'dist/app.d.ts']) {
      expect(existsSync(join(consumer, 'node_modules', 'tollgate', entry)), entry).toBe(true);
    }
  });
});
