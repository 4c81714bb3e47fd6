/** Gemini GenerateContentResponse (one JSON body, or one per SSE event) -> OpenAI completions and chunks. */
import { Type, type Static } from '@sinclair/typebox';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { UpstreamError } from '../provider.js';
import { eventDataJson } from '../sse.js';
import { Open, isObject } from '../../wire/index.js';
import type {
  UpstreamCompletion,
  UpstreamChunk,
  ChunkToolCallDelta,
  FinishReason,
  ToolCall,
  UpstreamUsage,
} from '../types.js';
import { withSignature } from './signature.js';

/** A part tollgate can read: its text a string, its function call one with a name; other fields pass. */
const GeminiPartSchema = Open({
  text: Type.Optional(Type.String()),
  thought: Type.Optional(Type.Boolean()),
  thoughtSignature: Type.Optional(Type.String()),
  functionCall: Type.Optional(
    Open({ name: Type.String(), args: Type.Optional(Type.Unknown()), id: Type.Optional(Type.String()) }),
  ),
});

const GeminiCandidateSchema = Open({
  index: Type.Optional(Type.Integer({ minimum: 0 })),
  content: Type.Optional(
    Open({ role: Type.Optional(Type.String()), parts: Type.Optional(Type.Array(GeminiPartSchema)) }),
  ),
  finishReason: Type.Optional(Type.String()),
});

/**
 * A GenerateContentResponse as tollgate reads it: its candidates. Usage is read where it is used (an answer without
 * readable usage is counted by the gateway); the other fields pass through.
 */
const GeminiResponseSchema = Open({
  candidates: Type.Optional(Type.Array(GeminiCandidateSchema)),
  promptFeedback: Type.Optional(Open({ blockReason: Type.Optional(Type.String()) })),
  usageMetadata: Type.Optional(Type.Unknown()),
  modelVersion: Type.Optional(Type.String()),
  responseId: Type.Optional(Type.String()),
  error: Type.Optional(Type.Unknown()),
});

type GeminiPart = Static<typeof GeminiPartSchema>;
type GeminiResponse = Static<typeof GeminiResponseSchema>;

const ResponseCheck = TypeCompiler.Compile(GeminiResponseSchema);

/** Safety and policy stops are content filters; FINISH_REASON_UNSPECIFIED and OTHER end the answer plainly. */
const FILTERED = new Set([
  'SAFETY',
  'RECITATION',
  'BLOCKLIST',
  'PROHIBITED_CONTENT',
  'SPII',
  'IMAGE_SAFETY',
  'LANGUAGE',
]);

export function finishReason(reason: string | undefined, hasCalls: boolean): FinishReason | null {
  if (!reason) return null;
  if (FILTERED.has(reason)) return 'content_filter';
  if (reason === 'MAX_TOKENS') return 'length';
  return hasCalls ? 'tool_calls' : 'stop';
}

/**
 * Usage by OpenAI's count, or undefined when Gemini reported no prompt count (the gateway then counts itself).
 * Counts that are not numbers are passed on (as NaN) for the gateway to refuse.
 */
export function toUsage(meta: unknown): UpstreamUsage | undefined {
  if (!isObject(meta) || meta.promptTokenCount === undefined) return undefined;
  const prompt = reportedCount(meta.promptTokenCount) + optionalCount(meta.toolUsePromptTokenCount);
  // Thinking tokens count toward output (billed at the output price, told apart as reasoning).
  const thoughts = optionalCount(meta.thoughtsTokenCount);
  const completion = optionalCount(meta.candidatesTokenCount) + thoughts;
  // Context-cache hits are part of promptTokenCount, billed at the cache price.
  const cached = optionalCount(meta.cachedContentTokenCount);
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    ...(cached ? { prompt_tokens_details: { cached_tokens: cached } } : {}),
    ...(thoughts ? { completion_tokens_details: { reasoning_tokens: thoughts } } : {}),
  };
}

/** A count Gemini may leave out (or null): 0 then. */
const optionalCount = (value: unknown): number => (value == null ? 0 : reportedCount(value));

/** A count Gemini reported: its number, or NaN when it is none, which the gateway's count check refuses. */
const reportedCount = (value: unknown): number => (typeof value === 'number' ? value : NaN);

function read(provider: string, json: unknown): GeminiResponse {
  if (!isObject(json)) {
    throw new UpstreamError(
      provider,
      'protocol',
      `${provider} answered with JSON that is not a GenerateContentResponse`,
    );
  }
  if (!ResponseCheck.Check(json))
    throw new UpstreamError(provider, 'protocol', `${provider} answered with candidates tollgate cannot read`);
  return json;
}

function callsOf(parts: GeminiPart[], first: number): ToolCall[] {
  return parts
    .flatMap(({ functionCall: call, thoughtSignature }) => (call ? [{ call, thoughtSignature }] : []))
    .map(({ call, thoughtSignature }, i): ToolCall => ({
      id: withSignature(call.id ?? `call_${first + i}`, thoughtSignature),
      type: 'function',
      function: { name: call.name, arguments: JSON.stringify(call.args ?? {}) },
    }));
}

const textOfParts = (parts: GeminiPart[]) =>
  parts.map((part) => (part.text !== undefined && !part.thought ? part.text : '')).join('');

export function fromGeminiResponse(provider: string, json: unknown, model: string): UpstreamCompletion {
  const response = read(provider, json);
  const candidates = response.candidates ?? [];
  const choices: UpstreamCompletion['choices'] = candidates.map((candidate, i) => {
    const parts = candidate.content?.parts ?? [];
    const calls = callsOf(parts, 0);
    const text = textOfParts(parts);
    return {
      index: candidate.index ?? i,
      message: {
        role: 'assistant',
        content: calls.length && !text ? null : text,
        ...(calls.length ? { tool_calls: calls } : {}),
        refusal: null,
      },
      logprobs: null,
      finish_reason: finishReason(candidate.finishReason ?? 'STOP', calls.length > 0),
    };
  });
  // A blocked prompt has no candidates, only promptFeedback.blockReason.
  if (choices.length === 0) {
    choices.push({
      index: 0,
      message: { role: 'assistant', content: null, refusal: null },
      logprobs: null,
      finish_reason: 'content_filter',
    });
  }
  const usage = toUsage(response.usageMetadata);
  return {
    id: response.responseId ? `chatcmpl-${response.responseId}` : `chatcmpl-gemini-${Date.now()}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: response.modelVersion ?? model,
    choices,
    ...(usage ? { usage } : {}),
  };
}

/** Turns each streamed GenerateContentResponse into one chunk; the last usageMetadata is kept for the end. */
export class StreamTranslator {
  private readonly created = Math.floor(Date.now() / 1000);
  private id = '';
  private started = false;
  /** Tool calls announced so far, per candidate. */
  private readonly calls = new Map<number, number>();
  usage: UpstreamUsage | undefined;
  finished = false;

  constructor(
    private readonly provider: string,
    private readonly model: string,
  ) {}

  translate(data: string): UpstreamChunk | null {
    const response = read(this.provider, eventDataJson(this.provider, data));
    if (response.error !== undefined) throw geminiError(this.provider, 502, response);
    this.id ||= response.responseId ? `chatcmpl-${response.responseId}` : `chatcmpl-gemini-${Date.now()}`;
    this.usage = toUsage(response.usageMetadata) ?? this.usage;
    const choices: UpstreamChunk['choices'] = [];
    const candidates = response.candidates ?? [];
    if (candidates.length === 0 && response.promptFeedback?.blockReason) {
      choices.push({
        index: 0,
        delta: { role: 'assistant', content: '' },
        logprobs: null,
        finish_reason: 'content_filter',
      });
    }
    candidates.forEach((candidate, i) => {
      const index = candidate.index ?? i;
      const parts = candidate.content?.parts ?? [];
      const delta: UpstreamChunk['choices'][number]['delta'] = {};
      if (!this.started) delta.role = 'assistant';
      const text = textOfParts(parts);
      if (text || !this.started) delta.content = text;
      const seen = this.calls.get(index) ?? 0;
      const calls = callsOf(parts, seen);
      if (calls.length) {
        // Gemini sends each function call whole, so one delta carries its id, name and all its arguments.
        delta.tool_calls = calls.map((call, k): ChunkToolCallDelta => ({ index: seen + k, ...call }));
        this.calls.set(index, seen + calls.length);
      }
      choices.push({
        index,
        delta,
        logprobs: null,
        finish_reason: finishReason(candidate.finishReason, (this.calls.get(index) ?? 0) > 0),
      });
    });
    this.started ||= choices.length > 0;
    if (choices.some((choice) => choice.finish_reason)) this.finished = true;
    if (choices.length === 0) return null;
    return {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: response.modelVersion ?? this.model,
      choices,
      // The usage so far (Gemini counts the prompt from the first event on), for a stream cut before its end.
      ...(this.usage ? { usage: this.usage } : {}),
    };
  }

  /** The closing chunk, after the stream ended: the last usage reported, choices empty (null if none was). */
  usageChunk(): UpstreamChunk | null {
    if (!this.usage) return null;
    return {
      id: this.id,
      object: 'chat.completion.chunk',
      created: this.created,
      model: this.model,
      choices: [],
      usage: this.usage,
    };
  }
}

/** Gemini's error body `{"error": {"code", "message", "status", "details"}}`; an invalid key gets a 400. */
export function geminiError(provider: string, status: number, json: unknown): UpstreamError {
  const error = isObject(json) && isObject(json.error) ? json.error : undefined;
  const badKey =
    Array.isArray(error?.details) &&
    error.details.some((detail) => isObject(detail) && detail.reason === 'API_KEY_INVALID');
  const code = typeof error?.code === 'number' && error.code >= 400 ? error.code : status;
  const message = typeof error?.message === 'string' ? error.message : `${provider} answered HTTP ${status}`;
  return new UpstreamError(provider, 'http', message, {
    status: badKey ? 401 : code,
  });
}
