/**
 * The baseline: the least a JSON-aware pass-through proxy has to do, so that tollgate's throughput and latency can
 * be read against it. `node:http` server + undici `Pool` to the upstream, with no logic: read the body,
 * `JSON.parse` + `JSON.stringify` it, forward it, `JSON.parse` + `JSON.stringify` the answer back. A streamed
 * answer is piped through as it arrives. Self-contained: `bench/run.ts` compiles it and starts it with `node`.
 *
 * Environment: UPSTREAM (origin, e.g. http://127.0.0.1:9000, required), UPSTREAM_KEY (optional bearer),
 * BASELINE_PORT (default 0; the chosen port is sent to the parent over IPC and printed).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool } from 'undici';

const upstream = process.env.UPSTREAM;
if (!upstream) throw new Error('UPSTREAM (the upstream origin) is required');
// Same pool shape as tollgate's OpenAI-compatible provider.
const pool = new Pool(upstream, { connections: 1024, pipelining: 1 }); // as tollgate's providers (UPSTREAM_CONNECTIONS)
const upstreamHeaders: Record<string, string> = { 'content-type': 'application/json' };
if (process.env.UPSTREAM_KEY) upstreamHeaders.authorization = `Bearer ${process.env.UPSTREAM_KEY}`;

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () =>
      resolve(parts.length === 1 ? parts[0]!.toString('utf8') : Buffer.concat(parts).toString('utf8')),
    );
    req.on('error', reject);
  });
}

function send(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  let body: { stream?: unknown };
  try {
    body = JSON.parse(await readBody(req)) as { stream?: unknown };
  } catch {
    return send(
      res,
      400,
      JSON.stringify({ error: { message: 'invalid JSON', type: 'invalid_request_error', param: null, code: null } }),
    );
  }
  const controller = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) controller.abort();
  });
  const answer = await pool.request({
    method: 'POST',
    path: req.url ?? '/',
    headers: upstreamHeaders,
    body: JSON.stringify(body),
    signal: controller.signal,
  });
  if (body.stream === true && answer.statusCode === 200) {
    res.writeHead(200, {
      'content-type': String(answer.headers['content-type'] ?? 'text/event-stream'),
      'cache-control': 'no-cache',
    });
    for await (const part of answer.body) {
      if (!res.write(part as Buffer)) {
        await new Promise<void>((resolve) => {
          res.once('drain', resolve);
          res.once('close', resolve);
        });
      }
    }
    res.end();
    return;
  }
  const text = await answer.body.text();
  send(res, answer.statusCode, JSON.stringify(JSON.parse(text)));
}

const server = createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
  res.on('error', () => undefined);
  handle(req, res).catch((error: unknown) => {
    if (!res.headersSent)
      send(
        res,
        502,
        JSON.stringify({ error: { message: String(error), type: 'server_error', param: null, code: null } }),
      );
    else res.destroy();
  });
});
server.listen(Number(process.env.BASELINE_PORT ?? 0), '127.0.0.1', () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`baseline proxy listening on http://127.0.0.1:${port} -> ${upstream}\n`);
  process.send?.({ port });
});
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
