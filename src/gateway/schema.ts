/**
 * Validation of request bodies against the wire contract's schemas, compiled once. Unknown fields pass through to
 * the provider. Checked after authentication, so a keyless request gets 401.
 */
import type { Static, TSchema } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import type { ValueError } from '@sinclair/typebox/errors';
import { GatewayError } from '../errors/index.js';
import { ChatRequestSchema, type ChatMessage, type ChatRequest } from '../wire/index.js';

export { ChatRequestSchema, type ChatRequest as ChatRequestBody };

/** A validator of a request body against `schema`, compiled once: the typed body, or a 400 naming the field. */
export function compiledValidator<T extends TSchema>(schema: T): (body: unknown) => Static<T> {
  const checker = TypeCompiler.Compile(schema);
  return (body) => {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new GatewayError('invalid_request', { message: 'The request body must be a JSON object' });
    }
    if (checker.Check(body)) return body;
    const errors = [...checker.Errors(body)];
    // The deepest path is the most precise; unions report their members' failures at deeper paths.
    const first = errors.reduce((a, b) => (b.path.length > a.path.length ? b : a), errors[0]!);
    const param = pointerToParam(first.path);
    const missing = first.value === undefined;
    throw new GatewayError('invalid_request', {
      message: missing
        ? `Missing required parameter: '${param}'.`
        : `Invalid value for '${param}': ${describe(first)}.`,
      param,
    });
  };
}

const validateChat = compiledValidator(ChatRequestSchema);

export function validateChatRequest(body: unknown): ChatRequest {
  const request = validateChat(body);
  checkContent(request.messages);
  return request;
}

/**
 * Content is required (and not null) in every message but an assistant's that calls tools; the message schema
 * leaves it optional, so that a missing content is named per message rather than in a union of every role's shape.
 */
function checkContent(messages: ChatMessage[]): void {
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    if (message.content != null || message.role === 'function') continue;
    if (message.role === 'assistant' && (message.tool_calls?.length || message.function_call)) continue;
    const param = `messages[${i}].content`;
    throw new GatewayError('invalid_request', {
      message:
        message.content === null
          ? `Invalid value for '${param}': expected string, or array of content parts, got null.`
          : `Missing required parameter: '${param}'.`,
      param,
    });
  }
}

/** A union's own message says nothing ("Expected union value"): list what its members expected instead. */
function describe(error: ValueError): string {
  if (error.errors.length === 0) return error.message;
  const expected = error.errors
    .map((member) => member.First()?.message)
    .filter((message): message is string => Boolean(message) && message !== 'Expected null');
  return expected.length ? [...new Set(expected)].join(', or ') : error.message;
}

/** `/messages/0/role` -> `messages[0].role` */
export function pointerToParam(pointer: string): string {
  return pointer
    .split('/')
    .filter(Boolean)
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
    .reduce((path, part) => (/^\d+$/.test(part) ? `${path}[${part}]` : path ? `${path}.${part}` : part), '');
}
