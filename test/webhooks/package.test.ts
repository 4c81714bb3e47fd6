/**
 * The receiver library as users get it: the `tollgate/webhooks` package entry points at the build of
 * src/webhooks/receiver, which depends on node:crypto only; and the example receiver, run as users run it
 * (importing `tollgate/webhooks`, so it needs the build), accepts a signed delivery and rejects a forged one.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { signWebhook } from '../../src/webhooks/receiver/index.js';

const root = new URL('../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), 'utf8');

describe('the tollgate/webhooks entry', () => {
  it('is exported by package.json and maps to the build of src/webhooks/receiver/index.ts', () => {
    const pkg = JSON.parse(read('package.json')) as {
      name: string;
      exports: Record<string, { types: string; default: string }>;
    };
    expect(pkg.name).toBe('tollgate');
    expect(pkg.exports['./webhooks']).toEqual({
      types: './dist/webhooks/receiver/index.d.ts',
      default: './dist/webhooks/receiver/index.js',
    });
    const build = JSON.parse(read('tsconfig.build.json')) as { compilerOptions: { rootDir: string; outDir: string } };
    expect(build.compilerOptions).toMatchObject({ rootDir: 'src', outDir: 'dist' });
    expect(existsSync(new URL('src/webhooks/receiver/index.ts', root))).toBe(true);
  });

  it('imports nothing but node:crypto and its own files', () => {
    for (const file of readdirSync(new URL('src/webhooks/receiver/', root))) {
      const imports = [...read(`src/webhooks/receiver/${file}`).matchAll(/from '([^']+)'/g)].map((m) => m[1]);
      for (const spec of imports) expect(['node:crypto', './types.js'], `${file} imports ${spec}`).toContain(spec);
    }
  });
});

const built = existsSync(new URL('dist/webhooks/receiver/index.js', root));
const children: ChildProcess[] = [];
afterAll(() => children.forEach((child) => child.kill('SIGKILL')));

describe.skipIf(!built)('examples/webhook-receiver.ts (needs `npm run build`)', () => {
  it('answers 204 to a signed delivery, 200 to its retry, 400 with the reason to a forged one', async () => {
    const secret = 'example-secret-0123456789-0123456789-0123';
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    await new Promise((resolve) => server.close(resolve));
    const child = spawn(process.execPath, ['--import', 'tsx', 'examples/webhook-receiver.ts'], {
      cwd: new URL('.', root).pathname,
      env: { ...process.env, WEBHOOK_SECRET: secret, PORT: String(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let output = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the example did not start:\n${output}`)), 20_000);
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('listening')) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout.on('data', onData);
      child.stderr.on('data', onData);
    });
    const body = JSON.stringify({
      id: 'evt_example',
      timestamp: new Date().toISOString(),
      event: 'llm.completion',
      data: { requestId: 'req_1', userId: 'u', model: 'sandbox/echo', prompt: 'Hi', completion: 'Hello' },
    });
    const send = (headers: Record<string, string>) =>
      fetch(`http://127.0.0.1:${port}/webhooks`, { method: 'POST', headers, body });
    expect((await send(signWebhook(body, secret))).status).toBe(204);
    expect((await send(signWebhook(body, secret))).status).toBe(200);
    const forged = await send(signWebhook(body, 'another-secret-0123456789-0123456789-01'));
    expect(forged.status).toBe(400);
    expect(await forged.json()).toEqual({ error: 'invalid_signature' });
    expect(output).toContain('sandbox/echo answered request req_1');
  });
});
