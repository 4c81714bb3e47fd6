/**
 * Gemini's thought signatures (https://ai.google.dev/gemini-api/docs/thought-signatures). Gemini 3 signs the
 * function calls it makes (`thoughtSignature` on the part) and rejects a later turn with a 400 when a replayed
 * call comes back without its signature. OpenAI clients echo only the tool call's id, so the signature travels
 * inside it: `call_0~ts~<signature>`. A call without one (made by another model, or by the client) gets Google's
 * documented sentinel that skips the check.
 */
const MARK = '~ts~';
export const SKIP_SIGNATURE = 'skip_thought_signature_validator';

export function withSignature(id: string, signature: string | undefined): string {
  return signature ? `${id}${MARK}${signature}` : id;
}

export function signatureOf(id: string): string | undefined {
  const at = id.indexOf(MARK);
  return at < 0 ? undefined : id.slice(at + MARK.length) || undefined;
}

/** Models that reject a replayed function call without a signature: Gemini 3 and later. */
export function requiresSignature(model: string): boolean {
  const major = /gemini-(\d+)/.exec(model)?.[1];
  return major !== undefined && Number(major) >= 3;
}
