/**
 * Routes declare their params, query string and body with TypeBox schemas; Fastify validates them (the server's
 * error handler renders the errors) and the type provider types them in the handler.
 */
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import { invalidRequest } from '../../errors/index.js';

export const typed = (server: FastifyInstance) => server.withTypeProvider<TypeBoxTypeProvider>();

export const IdParams = Type.Object({ id: Type.String() });

/**
 * A query parameter on arrival: a string, or all its values when it is given more than once. Query schemas
 * built from it accept every query string, so each route keeps its own messages for bad values.
 */
export const QueryValue = Type.Optional(Type.Union([Type.String(), Type.Array(Type.String())]));

/** `?limit=&before=` of the paged lists. */
export const PageQuery = Type.Object({ limit: QueryValue, before: QueryValue });

/** The parameter's one value; given more than once, a 400. */
export function single(value: string | string[] | undefined, name: string): string | undefined {
  if (Array.isArray(value)) throw invalidRequest(`Query parameter '${name}' was given more than once`, name);
  return value;
}
