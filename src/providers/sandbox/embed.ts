/**
 * The sandbox's embeddings: a deterministic unit vector per input, seeded by a hash of its text (or tokens), so
 * the same input always gets the same vector and different inputs get different ones.
 */
import { createHash } from 'node:crypto';
import { embeddingInputs, type EmbeddingCall, type EmbeddingInput, type UpstreamEmbeddings } from '../embeddings.js';

/** Dimensions when the request sets none. */
export const SANDBOX_DIMENSIONS = 256;

export function sandboxEmbeddings(call: EmbeddingCall): UpstreamEmbeddings {
  const inputs = embeddingInputs(call.body.input);
  const dimensions = call.body.dimensions ?? SANDBOX_DIMENSIONS;
  // No usage of its own: the gateway's count of the input is what it bills.
  return { vectors: inputs.map((input) => vectorOf(input, dimensions)), promptTokens: undefined };
}

function vectorOf(input: EmbeddingInput, dimensions: number): number[] {
  const seed = createHash('sha256')
    .update(typeof input === 'string' ? `t:${input}` : `n:${input.join(',')}`)
    .digest();
  // xorshift32 from the hash: cheap, and the same sequence on every machine.
  let state = seed.readUInt32LE(0) || 1;
  const values = new Array<number>(dimensions);
  let norm = 0;
  for (let i = 0; i < dimensions; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    const value = state / 0xffffffff - 0.5;
    values[i] = value;
    norm += value * value;
  }
  const scale = 1 / Math.sqrt(norm || 1);
  return values.map((value) => value * scale);
}
