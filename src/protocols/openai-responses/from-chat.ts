/**
 * A chat answer as a Response, in the shape OpenAI's published schema gives it: the assistant's text a `message`
 * item with an `output_text` part (its `annotations` and `logprobs` empty: chat has none to give), a refusal that
 * message's `refusal` part, each tool call a `function_call` item (a `custom_tool_call` one for a custom tool),
 * named as the client declared the tool; chat's usage the Response's (with `cost`), left out until it is known. The
 * request's settings are echoed as OpenAI echoes them.
 */
import { chatUsage } from '../../pricing/index.js';
import type { UpstreamCompletion, UpstreamChunk, UpstreamUsage } from '../../providers/index.js';
import type { ResponseRequest, ResponseTool } from './schema.js';
import { chatTools, customInput, type ChatTools } from './tools.js';
import type {
  CustomToolCallOutput,
  FunctionCallOutput,
  MessageOutput,
  OutputItem,
  OutputText,
  Refusal,
  ResponseObject,
  ResponseStatus,
  ResponseUsage,
} from './types.js';

/** Ids and time of one Response; `newId('msg')` gives a fresh item id. */
export interface ResponseMeta {
  id: string;
  createdAt: number;
  /** The catalog id of the model that answers. */
  model: string;
  newId(prefix: 'msg' | 'fc'): string;
}

/** The Response before any output: what `response.created` carries. */
export function responseShell(request: ResponseRequest, meta: ResponseMeta): ResponseObject {
  return {
    id: meta.id,
    object: 'response',
    created_at: meta.createdAt,
    status: 'in_progress',
    error: null,
    incomplete_details: null,
    instructions: request.instructions ?? null,
    max_output_tokens: request.max_output_tokens ?? null,
    metadata: request.metadata ?? {},
    model: meta.model,
    output: [],
    parallel_tool_calls: request.parallel_tool_calls ?? true,
    previous_response_id: null,
    reasoning: { effort: request.reasoning?.effort ?? null, summary: request.reasoning?.summary ?? null },
    store: request.store ?? true,
    temperature: request.temperature ?? 1,
    text: { format: request.text?.format ?? { type: 'text' } },
    tool_choice: request.tool_choice ?? 'auto',
    tools: (request.tools ?? []).map(echoedTool),
    top_p: request.top_p ?? 1,
    truncation: 'disabled',
    ...(request.user !== undefined ? { user: request.user } : {}),
  };
}

/** A declared tool as the Response echoes it: a function tool with its `parameters` and `strict`, null when unset. */
function echoedTool(tool: ResponseTool): ResponseTool {
  if (tool.type !== 'function') return tool;
  return { ...tool, parameters: tool.parameters ?? null, strict: tool.strict ?? null };
}

export function responseFromChat(
  request: ResponseRequest,
  completion: UpstreamCompletion,
  meta: ResponseMeta,
): ResponseObject {
  const choice = completion.choices[0];
  const output: OutputItem[] = [];
  const text = typeof choice?.message.content === 'string' ? choice.message.content : '';
  const refusal = typeof choice?.message.refusal === 'string' ? choice.message.refusal : '';
  const content = [...(text ? [textPart(text)] : []), ...(refusal ? [refusalPart(refusal)] : [])];
  if (content.length) output.push(messageItem(meta.newId('msg'), content, 'completed'));
  const tools = chatTools(request);
  for (const call of choice?.message.tool_calls ?? []) {
    output.push(callItem(tools, meta.newId('fc'), call.id, call.function.name, call.function.arguments, 'completed'));
  }
  return finished(responseShell(request, meta), output, choice?.finish_reason, completion.usage);
}

/** A chat tool call as the client's item: a `function_call`, or a `custom_tool_call` with its free-text input. */
export function callItem(
  tools: ChatTools,
  id: string,
  callId: string,
  chatName: string,
  args: string,
  status: 'in_progress' | 'completed',
): FunctionCallOutput | CustomToolCallOutput {
  const declared = tools.declared.get(chatName);
  const name = declared?.name ?? chatName;
  const namespace = declared?.namespace !== undefined ? { namespace: declared.namespace } : {};
  if (declared?.kind === 'custom')
    return { type: 'custom_tool_call', id, call_id: callId, name, ...namespace, input: customInput(args), status };
  return { type: 'function_call', id, call_id: callId, name, ...namespace, arguments: args, status };
}

export function messageItem(
  id: string,
  content: MessageOutput['content'],
  status: 'in_progress' | 'completed',
): MessageOutput {
  return { type: 'message', id, status, role: 'assistant', content };
}

/** Text as an `output_text` part: chat gives no annotations, and no log probabilities a Response can carry. */
export const textPart = (text: string): OutputText => ({ type: 'output_text', text, annotations: [], logprobs: [] });

export const refusalPart = (refusal: string): Refusal => ({ type: 'refusal', refusal });

/** The Response once its output is known: completed, or incomplete when the output was cut short. */
export function finished(
  shell: ResponseObject,
  output: OutputItem[],
  finishReason: UpstreamChunk['choices'][number]['finish_reason'] | undefined,
  usage: UpstreamUsage | null | undefined,
): ResponseObject {
  const reason =
    finishReason === 'length' ? 'max_output_tokens' : finishReason === 'content_filter' ? 'content_filter' : undefined;
  const status: ResponseStatus = reason ? 'incomplete' : 'completed';
  return {
    ...shell,
    status,
    incomplete_details: reason ? { reason } : null,
    output,
    ...(usage ? { usage: responseUsage(usage) } : {}),
  };
}

/**
 * Chat's usage in the Responses shape: prompt tokens are input (cache reads and writes among them, read as the
 * charge reads them), completion tokens output.
 */
export function responseUsage(usage: UpstreamUsage): ResponseUsage {
  const kinds = chatUsage(usage, { prompt: 0, completion: () => 0 });
  return {
    input_tokens: usage.prompt_tokens,
    input_tokens_details: {
      cached_tokens: kinds.cacheRead,
      cache_write_tokens: kinds.cacheWrite + kinds.cacheWrite1h,
    },
    output_tokens: usage.completion_tokens,
    output_tokens_details: { reasoning_tokens: kinds.reasoning },
    total_tokens: usage.total_tokens,
    cost: typeof usage.cost === 'number' ? usage.cost : 0,
  };
}
