/**
 * The checks an answer or stream chunk in OpenAI's chat format passes before the gateway reads it, compiled from
 * the wire contract's Readable* schemas: the choices the gateway reads must be readable; the rest passes through
 * (servers vary in what they send of it).
 */
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { ReadableUpstreamChunkSchema, ReadableUpstreamCompletionSchema } from '../wire/index.js';
import type { UpstreamChunk, UpstreamCompletion } from './types.js';

const CompletionCheck = TypeCompiler.Compile(ReadableUpstreamCompletionSchema);
const ChunkCheck = TypeCompiler.Compile(ReadableUpstreamChunkSchema);

/** An answer the gateway can meter and relay: choices with a message, and tool calls that are function calls. */
export function isUpstreamCompletion(json: unknown): json is UpstreamCompletion {
  return CompletionCheck.Check(json);
}

/** A stream chunk the relay can read: its choices are deltas, their tool calls objects. */
export function isUpstreamChunk(json: unknown): json is UpstreamChunk {
  return ChunkCheck.Check(json);
}
