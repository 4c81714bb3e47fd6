/** The whole sandbox answer to a request, computed up front; `complete` and `stream` only present it. */
import { countPromptTokens, countTextTokens, measureSliced } from '../../tokens/index.js';
import { UpstreamError, type ProviderCall } from '../provider.js';
import type { ChatRequest, FinishReason, ToolCall, ToolDefinition, UpstreamUsage } from '../types.js';
import { cutAtStop, cutToBytes, cutToTokens } from './cut.js';
import { sampleValue } from './schema.js';
import { hash, lastUserText, replyText } from './text.js';

export interface SandboxChoice {
  index: number;
  /** null for a tool call. */
  content: string | null;
  toolCall: ToolCall | null;
  finishReason: FinishReason;
}

export interface SandboxAnswer {
  choices: SandboxChoice[];
  usage: UpstreamUsage;
}

/** The most choices one sandbox request may ask for (`n`): a free answer must not multiply a long prompt. */
export const SANDBOX_MAX_CHOICES = 8;
/** The generated text of one sandbox answer, all choices together, is cut to this many UTF-8 bytes. */
export const SANDBOX_MAX_ANSWER_BYTES = 1024 * 1024;

/**
 * The answer, its prompt counted as a provider would; a large prompt or reply is counted in slices that yield (in
 * the request's own queue, taking turns with other requests), so a test key's large body does not hold the event loop.
 */
export async function buildAnswer(call: ProviderCall): Promise<SandboxAnswer> {
  const { body } = call;
  const count = choiceCount(body);
  const tool = forcedTool(body);
  const limits: Limits = { tokens: tokenLimit(body), bytes: Math.floor(SANDBOX_MAX_ANSWER_BYTES / count) };
  const choices = Array.from({ length: count }, (_, index) =>
    tool ? toolCallChoice(call, tool, index, limits) : textChoice(body, index, limits),
  );
  const slices = { queue: `sandbox ${call.requestId}`, signal: call.signal };
  const prompt = await measureSliced(() => countPromptTokens(body), slices);
  const completion = await measureSliced(() => choices.reduce((sum, choice) => sum + choiceTokens(choice), 0), slices);
  return {
    choices,
    usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
  };
}

/** Where each choice is cut: the request's token limit and this choice's share of the size cap. */
interface Limits {
  tokens: number | undefined;
  bytes: number;
}

function textChoice(body: ChatRequest, index: number, limits: Limits): SandboxChoice {
  const full = formatReply(body, replyText(body, index), limits.bytes);
  const stopped = cutAtStop(full, stopSequences(body));
  const capped = cutToBytes(stopped, limits.bytes);
  const content = limits.tokens === undefined ? capped : cutToTokens(capped, limits.tokens);
  const finishReason = content.length < stopped.length ? 'length' : 'stop';
  return { index, content, toolCall: null, finishReason };
}

function toolCallChoice(call: ProviderCall, tool: ToolDefinition, index: number, limits: Limits): SandboxChoice {
  const { name, parameters } = tool.function;
  const full = JSON.stringify(
    sampleValue(parameters, lastUserText(call.body.messages) || 'sandbox', { bytes: limits.bytes }),
  );
  // Like OpenAI, a token limit cuts the arguments mid-JSON (the name counts against it too); so does the size cap.
  const capped = cutToBytes(full, limits.bytes);
  const args =
    limits.tokens === undefined ? capped : cutToTokens(capped, Math.max(0, limits.tokens - countTextTokens(name)));
  const id = `call_${hash(`${call.requestId}/${index}/${name}`).toString(16).padStart(8, '0')}`;
  return {
    index,
    content: null,
    toolCall: { id, type: 'function', function: { name, arguments: args } },
    finishReason: args.length < full.length ? 'length' : 'tool_calls',
  };
}

function choiceTokens(choice: SandboxChoice): number {
  if (!choice.toolCall) return countTextTokens(choice.content ?? '');
  return countTextTokens(choice.toolCall.function.name) + countTextTokens(choice.toolCall.function.arguments);
}

/** JSON modes wrap the text in a JSON object; json_schema fills the schema's string fields with it. */
function formatReply(body: ChatRequest, text: string, maxBytes: number): string {
  const format = body.response_format;
  if (format?.type === 'json_schema' && format.json_schema?.schema !== undefined) {
    return JSON.stringify(sampleValue(format.json_schema.schema, text, { bytes: maxBytes }));
  }
  if (format?.type === 'json_object' || format?.type === 'json_schema') return JSON.stringify({ reply: text });
  return text;
}

/** The tool the reply must call, or undefined when it answers in text. */
function forcedTool(body: ChatRequest): ToolDefinition | undefined {
  const choice = body.tool_choice;
  if (choice === undefined || choice === null || choice === 'auto' || choice === 'none') return undefined;
  const tools = body.tools ?? [];
  if (choice === 'required') {
    if (tools[0]) return tools[0];
    throw badRequest(
      "Invalid value for 'tool_choice': 'required' is only allowed when 'tools' are specified.",
      'tool_choice',
    );
  }
  const name = choice.function?.name;
  const tool = tools.find((candidate) => candidate.function.name === name);
  if (tool) return tool;
  throw badRequest(`Invalid value for 'tool_choice': no function named '${String(name)}' in 'tools'.`, 'tool_choice');
}

function choiceCount(body: ChatRequest): number {
  const n = body.n ?? 1;
  if (Number.isInteger(n) && n >= 1 && n <= SANDBOX_MAX_CHOICES) return n;
  throw badRequest(`Invalid 'n': the sandbox answers 1 to ${SANDBOX_MAX_CHOICES} choices, got ${n}.`, 'n');
}

/** The smaller of max_tokens and max_completion_tokens, when either is set. */
function tokenLimit(body: ChatRequest): number | undefined {
  const limits = [body.max_tokens, body.max_completion_tokens].filter((value) => typeof value === 'number');
  return limits.length > 0 ? Math.max(0, Math.min(...limits)) : undefined;
}

function stopSequences(body: ChatRequest): string[] {
  const stop = body.stop ?? [];
  return (typeof stop === 'string' ? [stop] : stop).filter((sequence) => sequence.length > 0);
}

function badRequest(message: string, param: string): UpstreamError {
  return new UpstreamError('sandbox', 'http', message, { status: 400, param });
}
