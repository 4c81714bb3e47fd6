/**
 * The built-in `sandbox` provider: answers like an LLM, deterministically and without network. Upstream model
 * `lorem` writes prompt-seeded lorem ipsum; every other model name echoes the last user message.
 */
import type { Provider, ProviderCall } from '../provider.js';
import type { UpstreamCompletion } from '../types.js';
import { buildAnswer } from './answer.js';
import { completeSandboxText, streamSandboxText } from './complete-text.js';
import { sandboxEmbeddings } from './embed.js';
import { streamAnswer } from './stream.js';

const SYSTEM_FINGERPRINT = 'fp_sandbox';
let anonymousCalls = 0;

export function createSandboxProvider(): Provider {
  return {
    id: 'sandbox',
    complete: completion,
    async *stream(call) {
      const answer = await buildAnswer(call);
      yield* streamAnswer(call, answer, { ...head(call), object: 'chat.completion.chunk' });
    },
    embed: (call) => settled(() => sandboxEmbeddings(call)),
    completeText: completeSandboxText,
    streamText: streamSandboxText,
  };
}

/** A promise of what `make` returns, rejected (not thrown) when it throws, as an async adapter's would be. */
function settled<T>(make: () => T): Promise<T> {
  return new Promise((resolve) => resolve(make()));
}

async function completion(call: ProviderCall): Promise<UpstreamCompletion> {
  const answer = await buildAnswer(call);
  return {
    ...head(call),
    object: 'chat.completion',
    choices: answer.choices.map((choice) => ({
      index: choice.index,
      message: {
        role: 'assistant',
        content: choice.content,
        ...(choice.toolCall ? { tool_calls: [choice.toolCall] } : {}),
        refusal: null,
      },
      logprobs: null,
      finish_reason: choice.finishReason,
    })),
    usage: answer.usage,
  };
}

function head(call: ProviderCall) {
  return {
    id: `chatcmpl-${call.requestId || `sandbox${++anonymousCalls}`}`,
    created: Math.floor(Date.now() / 1000),
    model: call.body.model,
    system_fingerprint: SYSTEM_FINGERPRINT,
  };
}
