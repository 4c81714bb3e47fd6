/** OpenAI chat request -> Anthropic Messages request (https://docs.anthropic.com/en/api/messages). */
import { isImagePart, parseDataUrl, textOf, unsupported } from '../translate.js';
import type { ChatMessage, ChatRequest, ContentPart, ToolChoice } from '../types.js';

/** The tool a JSON-mode request is forced to call; its input is the answer (Anthropic has no `response_format`). */
export const JSON_TOOL = 'json_response';

type Block = Record<string, unknown>;
interface Message {
  role: 'user' | 'assistant';
  content: Block[];
}

export interface Translated {
  body: Record<string, unknown>;
  /** The answer arrives in the input of JSON_TOOL and is handed back stringified. */
  jsonTool: boolean;
}

/** Anthropic requires max_tokens; without one in the request, the model's own limit (or this) is sent. */
const FALLBACK_MAX_TOKENS = 4_096;

export function toAnthropicRequest(
  provider: string,
  request: ChatRequest,
  stream: boolean,
  defaultMaxTokens?: number,
): Translated {
  if ((request.n ?? 1) > 1) throw unsupported(provider, `${provider} cannot return more than one choice (n > 1)`, 'n');
  const system: Block[] = [];
  const messages: Message[] = [];
  const push = (role: Message['role'], content: Block[]) => {
    if (content.length === 0) return;
    const last = messages[messages.length - 1];
    // Anthropic wants alternating turns: consecutive messages of one role (tool results, say) become one.
    if (last?.role === role) last.content.push(...content);
    else messages.push({ role, content });
  };
  request.messages.forEach((message, index) => {
    switch (message.role) {
      case 'system':
      case 'developer': {
        const text = textOf(message.content);
        if (text) system.push({ type: 'text', text });
        return;
      }
      case 'assistant':
        return push('assistant', assistantBlocks(message));
      case 'tool':
        return push('user', [
          { type: 'tool_result', tool_use_id: message.tool_call_id ?? '', content: textOf(message.content) },
        ]);
      default:
        return push('user', userBlocks(provider, message, index));
    }
  });

  const body: Record<string, unknown> = {
    model: request.model,
    max_tokens: request.max_completion_tokens ?? request.max_tokens ?? defaultMaxTokens ?? FALLBACK_MAX_TOKENS,
    messages,
  };
  if (stream) body.stream = true;
  if (request.stop != null) body.stop_sequences = typeof request.stop === 'string' ? [request.stop] : request.stop;
  Object.assign(body, sampling(request.temperature, request.top_p));
  if (request.user) body.metadata = { user_id: request.user };

  let jsonTool = false;
  const tools: Block[] = (request.tools ?? []).map((tool) => ({
    name: tool.function.name,
    ...(tool.function.description ? { description: tool.function.description } : {}),
    input_schema: tool.function.parameters ?? { type: 'object', properties: {} },
  }));
  let toolChoice = request.tools?.length ? anthropicToolChoice(request.tool_choice) : undefined;
  const format = request.response_format;
  if (format && format.type !== 'text') {
    if (tools.length === 0) {
      const schema = format.json_schema?.schema;
      tools.push({
        name: JSON_TOOL,
        description: 'Give the answer as this JSON object.',
        input_schema: schema ?? { type: 'object' },
      });
      toolChoice = { type: 'tool', name: JSON_TOOL };
      jsonTool = true;
    } else {
      system.push({
        type: 'text',
        text: 'When you answer without calling a tool, answer with one JSON object and nothing else.',
      });
    }
  }
  if (tools.length) body.tools = tools;
  if (toolChoice) {
    if (request.parallel_tool_calls === false && toolChoice.type !== 'none')
      toolChoice.disable_parallel_tool_use = true;
    body.tool_choice = toolChoice;
  }
  if (system.length) body.system = system;
  return { body, jsonTool };
}

/**
 * OpenAI's temperature runs to 2, Anthropic's to 1. Claude models since Opus 4.1 reject `temperature` and `top_p`
 * together (400 "cannot both be specified"), so one is sent: `top_p` when it narrows sampling and the temperature
 * is at its ceiling (clients often send `temperature: 1` by default), the temperature otherwise.
 */
function sampling(temperature: number | null | undefined, topP: number | null | undefined): Block {
  const t = temperature == null ? undefined : Math.min(temperature, 1);
  if (t === undefined) return topP == null ? {} : { top_p: topP };
  if (topP == null || topP >= 1) return { temperature: t };
  return t >= 1 ? { top_p: topP } : { temperature: t };
}

function anthropicToolChoice(choice: ToolChoice | undefined): Block | undefined {
  if (choice === undefined || choice === 'auto') return { type: 'auto' };
  if (choice === 'required') return { type: 'any' };
  if (choice === 'none') return { type: 'none' };
  return { type: 'tool', name: choice.function.name };
}

function assistantBlocks(message: ChatMessage): Block[] {
  const blocks: Block[] = [];
  const text = textOf(message.content);
  if (text) blocks.push({ type: 'text', text });
  for (const call of message.tool_calls ?? []) {
    let input: unknown;
    try {
      input = JSON.parse(call.function.arguments || '{}');
    } catch {
      input = {};
    }
    blocks.push({ type: 'tool_use', id: call.id, name: call.function.name, input });
  }
  return blocks;
}

function userBlocks(provider: string, message: ChatMessage, index: number): Block[] {
  const { content } = message;
  if (typeof content === 'string') return content ? [{ type: 'text', text: content }] : [];
  return (content ?? []).map((part, partIndex) => userPart(provider, part, `messages[${index}].content[${partIndex}]`));
}

function userPart(provider: string, part: ContentPart, param: string): Block {
  if (part.type === 'text') return { type: 'text', text: String(part.text) };
  if (isImagePart(part)) {
    const url = String(part.image_url.url);
    const inline = parseDataUrl(url);
    if (inline) return { type: 'image', source: { type: 'base64', media_type: inline.mediaType, data: inline.data } };
    if (/^https?:\/\//i.test(url)) return { type: 'image', source: { type: 'url', url } };
    throw unsupported(provider, `${provider} takes images from http(s) URLs or base64 data URLs`, param);
  }
  throw unsupported(provider, `${provider} does not accept content parts of type '${part.type}'`, param);
}
