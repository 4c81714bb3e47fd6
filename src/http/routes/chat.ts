import { once } from 'node:events';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { createChatCompletion, type ChatResult } from '../../gateway/index.js';
import { ClientSignal } from '../client-signal.js';
import type { HttpDeps } from '../deps.js';

const KEEP_ALIVE_MS = 15_000;

export function chatRoutes(server: FastifyInstance, deps: HttpDeps): void {
  server.post('/v1/chat/completions', async (request, reply) => {
    const client = new ClientSignal();
    reply.raw.on('close', () => {
      if (!reply.raw.writableFinished) client.abort();
    });
    const result = await createChatCompletion(
      {
        authorization: request.headers.authorization,
        body: request.body,
        idempotencyKey: singleHeader(request.headers['idempotency-key']),
        requestId: request.id,
        signal: client,
        log: (fields) => request.log.info(fields, 'chat completion'),
      },
      deps,
    );
    if (result.kind === 'json') return reply.headers(result.headers).send(result.body);
    await writeEventStream(reply, result, client);
    return reply;
  });
}

/** A header sent twice arrives as a list: its first value (the key's shape is checked by the gateway). */
function singleHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** Writes SSE events as the gateway yields them, with backpressure and keep-alive comments while idle. */
async function writeEventStream(reply: FastifyReply, result: Extract<ChatResult, { kind: 'stream' }>, client: ClientSignal): Promise<void> {
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, {
    ...result.headers,
    'x-request-id': String(reply.request.id),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  let lastWrite = Date.now();
  const keepAlive = setInterval(() => {
    if (Date.now() - lastWrite >= KEEP_ALIVE_MS && !raw.writableEnded) raw.write(': keep-alive\n\n');
  }, KEEP_ALIVE_MS / 3);
  try {
    for await (const event of result.events) {
      if (client.aborted) break;
      lastWrite = Date.now();
      if (!raw.write(event)) await once(raw, 'drain', { signal: client });
    }
  } catch (error) {
    if (!client.aborted) reply.request.log.error({ err: error }, 'stream failed');
  } finally {
    clearInterval(keepAlive);
    await result.events.return(undefined);
    if (!raw.writableEnded) raw.end();
  }
}
