/**
 * How a Fastify route sends a metered endpoint's answer: a JSON body through Fastify, or an SSE stream written to
 * the raw response (the reply is hijacked, so Fastify neither serialises nor ends it).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Answer } from '../gateway/index.js';
import type { ClientSignal } from './client-signal.js';
import { writeEventStream } from './event-stream.js';

/** Returns the body for Fastify to send, or undefined once a stream has been written. */
export async function sendAnswer<B>(
  request: FastifyRequest,
  reply: FastifyReply,
  answer: Answer<B>,
  client: ClientSignal,
): Promise<B | undefined> {
  if (answer.kind === 'json') {
    void reply.headers(answer.headers);
    return answer.body;
  }
  void reply.hijack();
  // Fastify's onSend hooks do not run on a hijacked reply: the headers it would have set go on here.
  for (const [name, value] of Object.entries(reply.getHeaders())) {
    if (value !== undefined && !reply.raw.hasHeader(name)) reply.raw.setHeader(name, value);
  }
  await writeEventStream(reply.raw, answer, client, (error) => request.log.error({ err: error }, 'stream failed'));
  return undefined;
}
