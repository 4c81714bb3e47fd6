/**
 * Process entry: load config -> open storage -> build app -> listen; graceful shutdown on SIGTERM/SIGINT.
 * With `workers` > 1 this process only supervises that many server processes (node:cluster) sharing the port.
 */
import cluster from 'node:cluster';
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { createApp } from './app.js';
import { ConfigError, VERSION, loadConfig } from './config/index.js';
import { startTracing, stopTracing } from './observability/index.js';

/**
 * A full collection runs once the old generation is twice what survived the last one. V8's own factor, chosen by
 * its speed heuristics, either let a busy process's memory grow well beyond that or kept the heap so small that
 * full collections came again and again; a fixed 2x held memory lower at the same CPU per request
 * (docs/adr/0040-cheap-chat-path.md; the figures in docs/performance.md).
 */
const HEAP_GROWING_PERCENT = 100;

export async function main(): Promise<void> {
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`tollgate: ${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
  if (config.workers > 1 && cluster.isPrimary) return supervise(config.workers);
  const tracing = await startTracing(VERSION);
  const app = await createApp(config);
  const address = await app.listen();
  const port = new URL(address).port;
  const base = `http://${config.server.host === '0.0.0.0' ? '127.0.0.1' : config.server.host}:${port}`;
  if (app.firstStart) printFirstStart(app.firstStart, base);
  const shared = config.redis_url ? 'redis' : 'this process';
  const traces = tracing ? ', traces: OTLP' : '';
  process.stdout.write(
    `tollgate listening on ${address} (storage: ${app.storage.dialect}, limits and holds: ${shared}${traces}); API base URL ${base}/v1\n`,
  );

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    process.stdout.write(`tollgate: ${signal} received, finishing requests in flight\n`);
    app
      .close()
      .then(stopTracing)
      .then(
        () => process.exit(0),
        (error) => {
          process.stderr.write(`tollgate: shutdown failed: ${String(error)}\n`);
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

/** Forks the workers, replaces one that dies, and passes a shutdown signal on to all of them. */
function supervise(workers: number): void {
  let stopping = false;
  const fork = () => cluster.fork();
  for (let i = 0; i < workers; i++) fork();
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
      return;
    }
    process.stderr.write(`tollgate: worker ${worker.process.pid} exited (${signal ?? code}); starting another\n`);
    fork();
  });
  const stop = (signal: NodeJS.Signals) => {
    stopping = true;
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill(signal);
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  process.stdout.write(`tollgate: supervising ${workers} workers\n`);
}

function printFirstStart(first: NonNullable<Awaited<ReturnType<typeof createApp>>['firstStart']>, base: string): void {
  const lines = [
    '',
    '  tollgate first start: these are shown once, keep them somewhere safe.',
    '',
    first.adminToken ? `  Admin token:    ${first.adminToken}` : '  Admin token:    (from TOLLGATE_ADMIN_TOKEN)',
    `  First account:  ${first.accountId} (${first.email})`,
    `  API key:        ${first.apiKey}`,
    '',
    `  Try it:  curl ${base}/v1/chat/completions -H "Authorization: Bearer ${first.apiKey}" \\`,
    `             -H "Content-Type: application/json" -d '{"model":"sandbox/echo","messages":[{"role":"user","content":"Hello"}]}'`,
    '',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

function isEntryPoint(): boolean {
  try {
    return realpathSync(process.argv[1] ?? '') === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isEntryPoint()) {
  // A closed stdout (e.g. piped into `head`) must not crash a running gateway.
  process.stdout.on('error', () => undefined);
  main().catch((error: unknown) => {
    process.stderr.write(`tollgate: failed to start: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
