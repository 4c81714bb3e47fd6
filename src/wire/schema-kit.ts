/** Small TypeBox builders the wire schemas share. */
import { Type, type ObjectOptions, type Static, type TObject, type TProperties, type TSchema } from '@sinclair/typebox';

/** `T` or null. */
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

/** A field that may be absent or null. */
export const OptionalNullable = <T extends TSchema>(schema: T) => Type.Optional(Nullable(schema));

/**
 * An object whose other fields pass through (OpenAI adds fields faster than a gateway can list them). The JSON
 * Schema is `Type.Object`'s, unchanged; only its TypeScript type gains an index signature for those fields.
 */
export const Open = <T extends TProperties>(properties: T, options?: ObjectOptions) =>
  Type.Unsafe<Static<TObject<T>> & { [field: string]: unknown }>(Type.Object(properties, options));

export const Usd = (description: string) => Type.Number({ description: `${description} (USD, at most 9 decimals)` });

export const UnixSeconds = Type.Integer({ description: 'Unix time in seconds' });
