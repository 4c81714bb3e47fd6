/** Presenting a sandbox answer in OpenAI's chat-completion chunks. */
import type { ProviderCall } from '../provider.js';
import type { UpstreamChunk } from '../types.js';
import type { SandboxAnswer, SandboxChoice } from './answer.js';

type ChunkChoice = UpstreamChunk['choices'][number];
type Head = Pick<UpstreamChunk, 'id' | 'object' | 'created' | 'model' | 'system_fingerprint'>;

/**
 * Per choice: an opening delta, content (or argument) pieces, a closing delta with the finish reason; choices
 * interleaved like OpenAI's; then always a usage chunk. Returns early once the call is aborted.
 */
export async function* streamAnswer(
  call: ProviderCall,
  answer: SandboxAnswer,
  head: Head,
): AsyncGenerator<UpstreamChunk> {
  const perChoice = answer.choices.map(choiceDeltas);
  const steps = Math.max(...perChoice.map((deltas) => deltas.length));
  for (let step = 0; step < steps; step++) {
    for (const deltas of perChoice) {
      const choice = deltas[step];
      if (!choice) continue;
      // Yield to the event loop so a client disconnect can abort the signal between chunks.
      await new Promise(setImmediate);
      if (call.signal.aborted) return;
      yield { ...head, choices: [choice] };
    }
  }
  await new Promise(setImmediate);
  if (call.signal.aborted) return;
  yield { ...head, choices: [], usage: answer.usage };
}

function choiceDeltas(choice: SandboxChoice): ChunkChoice[] {
  const part = (delta: ChunkChoice['delta'], finishReason: ChunkChoice['finish_reason'] = null): ChunkChoice => ({
    index: choice.index,
    delta,
    logprobs: null,
    finish_reason: finishReason,
  });
  const parts: ChunkChoice[] = [];
  if (choice.toolCall) {
    const { id, type, function: fn } = choice.toolCall;
    const opening = { index: 0, id, type, function: { name: fn.name, arguments: '' } };
    parts.push(part({ role: 'assistant', content: null, tool_calls: [opening] }));
    for (const piece of pieces(fn.arguments))
      parts.push(part({ tool_calls: [{ index: 0, function: { arguments: piece } }] }));
  } else {
    parts.push(part({ role: 'assistant', content: '' }));
    for (const piece of pieces(choice.content ?? '')) parts.push(part({ content: piece }));
  }
  parts.push(part({}, choice.finishReason));
  return parts;
}

/** Splits text into word-sized pieces (at most 16 code points plus leading space) that concatenate back to it. */
export function pieces(text: string): string[] {
  return text.match(/\s*\S{1,16}|\s+/gu) ?? [];
}
