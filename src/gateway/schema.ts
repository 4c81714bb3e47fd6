/**
 * Validation of request bodies against the wire contract's schemas, compiled once. Unknown fields pass through to
 * the provider. Checked after authentication, so a keyless request gets 401.
 */
import type { Static, TSchema } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors';
import {
  pointerDepth,
  pointerToParam,
  unionMemberToReport,
  validationError,
  type SchemaFault,
} from '../errors/validation.js';
import { ChatRequestSchema, type ChatMessage, type ChatRequest } from '../wire/index.js';

export { ChatRequestSchema, type ChatRequest as ChatRequestBody };

/** A validator of a request body against `schema`, compiled once: the typed body, or a 400 naming the field. */
export function compiledValidator<T extends TSchema>(schema: T): (body: unknown) => Static<T> {
  const checker = TypeCompiler.Compile(schema);
  return (body) => {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw validationError({ pointer: '', kind: 'invalid', schema });
    }
    if (checker.Check(body)) return body;
    throw validationError(faultOf([...checker.Errors(body)]));
  };
}

/**
 * The fault to report among TypeBox's: the deepest (the most precise), the first on a tie; a union is reported
 * as the fault of the member `unionMemberToReport` picks, if any.
 */
function faultOf(errors: ValueError[]): SchemaFault {
  const first = deepest(errors);
  if (first.type === ValueErrorType.Union) {
    const members = first.errors.map((member) => [...member]);
    const index = unionMemberToReport(first.schema, first.value, (i) =>
      members[i]!.length ? pointerDepth(deepest(members[i]!).path) : -1,
    );
    if (index !== undefined && members[index]!.length) return faultOf(members[index]!);
  }
  if (first.type === ValueErrorType.ObjectAdditionalProperties) return { pointer: first.path, kind: 'unknown' };
  return { pointer: first.path, kind: first.value === undefined ? 'missing' : 'invalid', schema: first.schema };
}

const deepest = (errors: ValueError[]) =>
  errors.reduce((a, b) => (pointerDepth(b.path) > pointerDepth(a.path) ? b : a), errors[0]!);

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
    const pointer = `/messages/${i}/content`;
    throw validationError(
      message.content === null ? { pointer, kind: 'invalid', schema: NON_NULL_CONTENT } : { pointer, kind: 'missing' },
    );
  }
}

/** A message's content where it may not be null. */
const NON_NULL_CONTENT = { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'object' } }] };

export { pointerToParam };
