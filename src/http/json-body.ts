/**
 * Reads a request's JSON body by the rules Fastify's parser applies to every other route (same limits, same
 * errors), for the route served ahead of Fastify. `__proto__` and `constructor.prototype` keys are refused, as
 * Fastify refuses them, by secure-json-parse (Fastify's own parser).
 */
import type { IncomingMessage } from 'node:http';
import secureJson from 'secure-json-parse';
import { GatewayError } from '../errors/index.js';
import { BODY_TOO_LARGE, LENGTH_MISMATCH, NOT_JSON } from './errors.js';

const PARSE_OPTIONS = { protoAction: 'error', constructorAction: 'error' } as const;
const UNPARSABLE = 'We could not parse the JSON body of your request: ';

/** The parsed body; undefined for a request with neither a body nor a Content-Type, a string for text/plain. */
export function readJsonBody(req: IncomingMessage, limitBytes: number): Promise<unknown> {
  const { headers } = req;
  const type = headers['content-type'];
  const declared = headers['content-length'];
  if (type === undefined && headers['transfer-encoding'] === undefined && (declared === undefined || declared === '0')) {
    return Promise.resolve(undefined);
  }
  const media = type === undefined ? '' : mediaType(type);
  // Fastify also reads text/plain, as a string (which no JSON route then accepts).
  if (media !== 'application/json' && media !== 'text/plain') return Promise.reject(new GatewayError('invalid_request', { message: NOT_JSON }));
  const length = Number(declared);
  if (length > limitBytes) return Promise.reject(new GatewayError('request_too_large', { message: BODY_TOO_LARGE }));

  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let received = 0;
    const stop = () => {
      req.removeListener('data', onData);
      req.removeListener('end', onEnd);
      req.removeListener('error', onError);
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
      if (!Number.isNaN(length) && received !== length) return reject(new GatewayError('invalid_request', { message: LENGTH_MISMATCH }));
      const text = chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks, received).toString('utf8');
      if (media === 'text/plain') return resolve(text);
      if (received === 0) return reject(new GatewayError('invalid_request', { message: `${UNPARSABLE}Body cannot be empty when content-type is set to 'application/json'` }));
      try {
        resolve(secureJson.parse(text, undefined, PARSE_OPTIONS));
      } catch {
        reject(new GatewayError('invalid_request', { message: `${UNPARSABLE}Body is not valid JSON but content-type is set to 'application/json'` }));
      }
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

/** `application/json; charset=utf-8` -> `application/json`. */
function mediaType(header: string): string {
  const semicolon = header.indexOf(';');
  return (semicolon < 0 ? header : header.slice(0, semicolon)).trim().toLowerCase();
}
