/**
 * Reads a request's JSON body by the rules Fastify's parser applies to every other route (same limits, same
 * errors), for the route served ahead of Fastify. `__proto__` and `constructor.prototype` keys are refused, as
 * Fastify refuses them, by secure-json-parse (Fastify's own parser). `parseJsonText` is also Fastify's JSON parser
 * (http/server.ts), so every JSON body has the same nesting bound.
 */
import type { IncomingMessage } from 'node:http';
import secureJson, { type ParseOptions } from 'secure-json-parse';
import { GatewayError } from '../errors/index.js';
import { BODY_TOO_LARGE, LENGTH_MISMATCH, NOT_JSON } from './errors.js';

const PARSE_OPTIONS: ParseOptions = { protoAction: 'error', constructorAction: 'error' };
const UNPARSABLE = 'We could not parse the JSON body of your request: ';
/** Deepest nesting of arrays and objects a JSON body may have (the body itself is level 1; docs/api.md). */
export const MAX_JSON_DEPTH = 64;

/** A body's declared size (its Content-Length, which the body read checks), when it has one. */
export function declaredBytes(contentLength: string | undefined): number | undefined {
  if (contentLength === undefined || !/^\d+$/.test(contentLength)) return undefined;
  return Number(contentLength);
}

/** The parsed body; undefined for a request without a body, a string for text/plain. */
export function readJsonBody(req: IncomingMessage, limitBytes: number): Promise<unknown> {
  const { headers } = req;
  const type = headers['content-type'];
  const declared = headers['content-length'];
  if (
    type === undefined &&
    headers['transfer-encoding'] === undefined &&
    (declared === undefined || declared === '0')
  ) {
    return Promise.resolve(undefined);
  }
  const media = type === undefined ? '' : mediaType(type);
  // Fastify also reads text/plain, into a string (which no JSON route then accepts).
  if (media !== 'application/json' && media !== 'text/plain')
    return Promise.reject(new GatewayError('invalid_request', { message: NOT_JSON }));
  const length = Number(declared);
  if (length > limitBytes) return Promise.reject(new GatewayError('request_too_large', { message: BODY_TOO_LARGE }));

  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const stop = () => {
      req.removeListener('data', onData);
      req.removeListener('end', onEnd);
      req.removeListener('error', onError);
      req.removeListener('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      received += chunk.length;
      if (received > limitBytes) {
        stop();
        reject(new GatewayError('request_too_large', { message: BODY_TOO_LARGE }));
      } else chunks.push(chunk);
    };
    const onError = (error: Error) => {
      stop();
      reject(new GatewayError('invalid_request', { message: `Invalid request: ${error.message}` }));
    };
    const onEnd = () => {
      stop();
      if (!Number.isNaN(length) && received !== length)
        return reject(new GatewayError('invalid_request', { message: LENGTH_MISMATCH }));
      const text = chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks, received).toString('utf8');
      if (media === 'text/plain') return resolve(text);
      // An empty body is no body, like on Fastify's routes (http/server.ts).
      if (received === 0) return resolve(undefined);
      try {
        resolve(parseJsonText(text));
      } catch (error) {
        reject(error instanceof Error ? error : new Error(String(error)));
      }
    };
    // A client that goes away mid-body may close the request without an 'error': the read must not wait forever.
    const onClose = () => {
      stop();
      reject(new GatewayError('invalid_request', { message: 'The client closed the request' }));
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

/**
 * JSON text by Fastify's rules, nested at most MAX_JSON_DEPTH deep: deeper values would overflow the stack of
 * whatever walks them recursively later (JSON.stringify, schema checks, the idempotency fingerprint).
 */
export function parseJsonText(text: string): unknown {
  let value: unknown;
  try {
    value = secureJson.parse(text, undefined, PARSE_OPTIONS);
  } catch {
    throw new GatewayError('invalid_request', {
      message: `${UNPARSABLE}Body is not valid JSON but content-type is set to 'application/json'`,
    });
  }
  if (tooDeep(value))
    throw new GatewayError('invalid_request', {
      message: `${UNPARSABLE}it is nested more than ${MAX_JSON_DEPTH} levels deep`,
    });
  return value;
}

/** One pass with an explicit stack over the parsed value (cheaper than a scan of the text, whose strings are long). */
function tooDeep(root: unknown): boolean {
  if (typeof root !== 'object' || root === null) return false;
  // Pairs of (value, its depth).
  const stack: unknown[] = [root, 1];
  while (stack.length > 0) {
    const depth = stack.pop() as number;
    const value = stack.pop() as Record<string, unknown> | unknown[];
    if (depth > MAX_JSON_DEPTH) return true;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const item = value[i];
        if (typeof item === 'object' && item !== null) stack.push(item, depth + 1);
      }
    } else {
      for (const key in value) {
        const item = value[key];
        if (typeof item === 'object' && item !== null) stack.push(item, depth + 1);
      }
    }
  }
  return false;
}

/** `application/json; charset=utf-8` -> `application/json`. */
function mediaType(header: string): string {
  const semicolon = header.indexOf(';');
  return (semicolon < 0 ? header : header.slice(0, semicolon)).trim().toLowerCase();
}
