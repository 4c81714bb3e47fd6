/**
 * One real gateway process (`node dist/main.js`, what `npm start` runs) on SQLite or PostgreSQL (+ Redis), that a
 * test can SIGKILL and start again on the same port and data. dist/ must be built (`npm run build`).
 * Every child is killed when the test process exits.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './replicas.js';
import { adminCall } from './admin-call.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const START_TIMEOUT_MS = 40_000;
const children = new Set<ChildProcess>();
process.once('exit', () => children.forEach((child) => child.kill('SIGKILL')));

export interface ChildGateway {
  url: string;
  adminToken: string;
  /** Whatever the child wrote (all runs). */
  output(): string;
  pid(): number | undefined;
  /** Resident set size of the running child in bytes, from /proc. */
  rss(): number;
  kill(signal?: NodeJS.Signals): Promise<void>;
  start(): Promise<void>;
  admin(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
}

export async function startChildGateway(options: {
  dataDir: string;
  adminToken: string;
  env?: Record<string, string>;
  nodeArgs?: string[];
}): Promise<ChildGateway> {
  let port = await freePort();
  let url = `http://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let text = '';

  const start = async () => {
    if (child) throw new Error('the gateway is already running');
    const env = {
      PATH: process.env.PATH ?? '',
      HOST: '127.0.0.1',
      PORT: String(port),
      TOLLGATE_DATA_DIR: options.dataDir,
      TOLLGATE_ADMIN_TOKEN: options.adminToken,
      TOLLGATE_LOG_LEVEL: 'warn',
      ...options.env,
    };
    const running = spawn(process.execPath, [...(options.nodeArgs ?? []), join(ROOT, 'dist', 'main.js')], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = running;
    children.add(running);
    let listening = false;
    let code: string | undefined;
    running.stdout.on('data', (d: Buffer) => {
      text += d.toString();
      listening ||= /listening on/.test(text.slice(-4096));
    });
    running.stderr.on('data', (d: Buffer) => (text += d.toString()));
    exited = new Promise((done) =>
      running.once('exit', (c, signal) => {
        code = String(c ?? signal);
        children.delete(running);
        if (child === running) child = undefined;
        done();
      }),
    );
    const until = Date.now() + START_TIMEOUT_MS;
    while (!listening) {
      if (code !== undefined) throw new Error(`the gateway exited (${code}) before listening:\n${text}`);
      if (Date.now() > until) throw new Error(`the gateway did not listen within ${START_TIMEOUT_MS} ms:\n${text}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  };
  // A free port can be taken between finding it and the child binding it (e.g. by the child's own inspector, which
  // also binds an ephemeral port): the first start moves to another port then.
  for (let attempt = 1; ; attempt++) {
    try {
      await start();
      break;
    } catch (error) {
      if (attempt >= 3 || !new RegExp(`EADDRINUSE[^\\n]*:${port}\\b`).test(String(error))) throw error;
      port = await freePort();
      url = `http://127.0.0.1:${port}`;
    }
  }

  return {
    url,
    adminToken: options.adminToken,
    output: () => text,
    pid: () => child?.pid,
    rss() {
      const status = readFileSync(`/proc/${child!.pid}/status`, 'utf8');
      return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
    },
    async kill(signal = 'SIGKILL') {
      if (!child) return;
      child.kill(signal);
      await exited;
    },
    start,
    admin: (method, path, body) => adminCall(url, options.adminToken, method, path, body),
  };
}
