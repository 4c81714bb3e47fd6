/** Gemini GenerateContentResponse (one JSON body, or one per SSE event) -> OpenAI completions and chunks. */
import { UpstreamError } from '../provider.js';
import { eventDataJson } from '../sse.js';
import { isObject } from '../../wire/index.js';
import type {
  UpstreamCompletion,
  UpstreamChunk,
  ChunkToolCallDelta,
  FinishReason,
  ToolCall,
  UpstreamUsage,
} from '../types.js';
import { withSignature } from './signature.js';

interface GeminiPart {
  text?: string;
  thought?: boolean;
  thoughtSignature?: string;
  functionCall?: { name: string; args?: unknown; id?: string };
}

interface GeminiCandidate {
  index?: number;
  content?: { role?: string; parts?: GeminiPart[] };
  finishReason?: string;
}

interface GeminiResponse {
  candidates?: GeminiCandidate[];
  promptFeedback?: { blockReason?: string };
  usageMetadata?: {
    promptTokenCount?: number;
    candidatesTokenCount?: number;
    thoughtsTokenCount?: number;
    toolUsePromptTokenCount?: number;
  };
  modelVersion?: string;
  responseId?: string;
  error?: unknown;
}

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

/** UpstreamUsage by OpenAI's count, or undefined when Gemini reported no prompt count (the gateway then counts itself). */
export function toUsage(meta: GeminiResponse['usageMetadata']): UpstreamUsage | undefined {
  if (!isObject(meta) || meta.promptTokenCount === undefined) return undefined;
  const prompt = (meta.promptTokenCount ?? 0) + (meta.toolUsePromptTokenCount ?? 0);
  // Thinking tokens count toward output.
  const completion = (meta.candidatesTokenCount ?? 0) + (meta.thoughtsTokenCount ?? 0);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

/** A part tollgate can read: its text a string, its function call one with a name. */
function isPart(part: unknown): part is GeminiPart {
  if (!isObject(part)) return false;
  if (part.text !== undefined && typeof part.text !== 'string') return false;
  return part.functionCall === undefined || (isObject(part.functionCall) && typeof part.functionCall.name === 'string');
}

function isCandidate(candidate: unknown): candidate is GeminiCandidate {
  if (!isObject(candidate)) return false;
  const { content } = candidate;
  if (content === undefined) return true;
  return (
    isObject(content) && (content.parts === undefined || (Array.isArray(content.parts) && content.parts.every(isPart)))
  );
}

function read(provider: string, json: unknown): GeminiResponse {
  if (!isObject(json)) {
    throw new UpstreamError(
      provider,
      'protocol',
      `${provider} answered with JSON that is not a GenerateContentResponse`,
    );
  }
  if (!isResponse(json))
    throw new UpstreamError(provider, 'protocol', `${provider} answered with candidates tollgate cannot read`);
  return json;
}

/** An answer tollgate can read: its candidates; the other fields pass through unchecked. */
function isResponse(json: Record<string, unknown>): json is Record<string, unknown> & GeminiResponse {
  return json.candidates === undefined || (Array.isArray(json.candidates) && json.candidates.every(isCandidate));
}

function callsOf(parts: GeminiPart[], first: number): ToolCall[] {
  return parts
    .filter((part) => part.functionCall)
    .map((part, i): ToolCall => ({
      id: withSignature(part.functionCall!.id ?? `call_${first + i}`, part.thoughtSignature),
      type: 'function',
      function: { name: part.functionCall!.name, arguments: JSON.stringify(part.functionCall!.args ?? {}) },
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
