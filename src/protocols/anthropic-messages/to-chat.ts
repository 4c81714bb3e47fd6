/**
 * A Messages request in chat's terms, for the providers that speak chat and for measuring the prompt. What chat
 * cannot carry is left out: thinking blocks (their signatures mean something to Anthropic only), `cache_control`,
 * `top_k`, Anthropic's server tools.
 */
import {
  isObject,
  type ChatMessage,
  type ChatRequest,
  type ContentPart,
  type ToolChoice,
  type ToolDefinition,
} from '../../wire/index.js';
import type { ContentBlock, CountTokensRequest, MessageParam, MessagesRequest, ToolChoiceParam } from './schema.js';

type Block = Record<string, unknown> & { type: string };

export function toChatRequest(request: MessagesRequest | CountTokensRequest): ChatRequest {
  const messages: ChatMessage[] = [];
  const system = systemText(request.system);
  if (system) messages.push({ role: 'system', content: system });
  for (const message of request.messages) messages.push(...chatMessages(message));
  const chat: ChatRequest = { model: request.model, messages };
  if ('max_tokens' in request && typeof request.max_tokens === 'number') chat.max_tokens = request.max_tokens;
  if ('stop_sequences' in request && Array.isArray(request.stop_sequences)) chat.stop = request.stop_sequences;
  if ('temperature' in request && typeof request.temperature === 'number') chat.temperature = request.temperature;
  if ('top_p' in request && typeof request.top_p === 'number') chat.top_p = request.top_p;
  if ('stream' in request && request.stream === true) {
    chat.stream = true;
    // The closing usage (with its cost) becomes message_delta's usage.
    chat.stream_options = { include_usage: true };
  }
  const user = request.metadata?.user_id;
  if (typeof user === 'string' && user) chat.user = user;
  const tools = (request.tools ?? []).flatMap((tool): ToolDefinition[] =>
    tool.input_schema && (tool.type === undefined || tool.type === 'custom')
      ? [
          {
            type: 'function',
            function: {
              name: tool.name,
              ...(tool.description ? { description: tool.description } : {}),
              parameters: tool.input_schema,
            },
          },
        ]
      : [],
  );
  if (tools.length) {
    chat.tools = tools;
    if (request.tool_choice) {
      chat.tool_choice = chatToolChoice(request.tool_choice);
      if (request.tool_choice.disable_parallel_tool_use) chat.parallel_tool_calls = false;
    }
  }
  return chat;
}

function systemText(system: MessagesRequest['system']): string {
  if (system === undefined) return '';
  if (typeof system === 'string') return system;
  return system.map((block) => block.text).join('\n');
}

function chatToolChoice(choice: ToolChoiceParam): ToolChoice {
  switch (choice.type) {
    case 'any':
      return 'required';
    case 'none':
      return 'none';
    case 'tool':
      return choice.name ? { type: 'function', function: { name: choice.name } } : 'required';
    default:
      return 'auto';
  }
}

/** One Messages turn as chat messages: a user turn's tool results become `tool` messages ahead of its other content. */
function chatMessages(message: MessageParam): ChatMessage[] {
  if (typeof message.content === 'string') return [{ role: message.role, content: message.content }];
  const blocks: Block[] = message.content;
  if (message.role === 'system') return [{ role: 'system', content: blocksText(blocks) }];
  if (message.role === 'assistant') return [assistantMessage(blocks)];
  const out: ChatMessage[] = [];
  const parts: ContentPart[] = [];
  for (const block of blocks) {
    if (block.type === 'tool_result') {
      out.push({ role: 'tool', tool_call_id: String(block.tool_use_id), content: toolResultText(block) });
      continue;
    }
    const part = contentPart(block);
    if (part) parts.push(part);
  }
  if (parts.length) out.push({ role: 'user', content: parts });
  return out;
}

/** The text blocks' text, joined (a system turn's content). */
function blocksText(blocks: Block[]): string {
  return blocks
    .flatMap((block) => (block.type === 'text' && typeof block.text === 'string' ? [block.text] : []))
    .join('\n');
}

function assistantMessage(blocks: Block[]): ChatMessage {
  let text = '';
  const toolCalls = [];
  for (const block of blocks) {
    if (block.type === 'text' && typeof block.text === 'string') text += block.text;
    else if (block.type === 'tool_use')
      toolCalls.push({
        id: String(block.id),
        type: 'function' as const,
        function: { name: String(block.name), arguments: JSON.stringify(block.input ?? {}) },
      });
  }
  return toolCalls.length
    ? { role: 'assistant', content: text || null, tool_calls: toolCalls }
    : { role: 'assistant', content: text };
}

function toolResultText(block: Block): string {
  const { content } = block;
  const text =
    typeof content === 'string'
      ? content
      : Array.isArray(content)
        ? content
            .map((part: Block) => (part.type === 'text' && typeof part.text === 'string' ? part.text : ''))
            .join('')
        : '';
  return block.is_error === true ? `Error: ${text}` : text;
}

/** A user block as a chat content part; blocks chat has no place for are left out. */
function contentPart(block: ContentBlock | Block): ContentPart | undefined {
  const source = isObject(block.source) ? block.source : undefined;
  switch (block.type) {
    case 'text':
      return { type: 'text', text: String(block.text) };
    case 'image':
      if (source?.type === 'base64')
        return {
          type: 'image_url',
          image_url: { url: `data:${String(source.media_type)};base64,${String(source.data)}` },
        };
      if (source?.type === 'url') return { type: 'image_url', image_url: { url: String(source.url) } };
      return undefined;
    case 'document':
      if (source?.type === 'text') return { type: 'text', text: typeof source.data === 'string' ? source.data : '' };
      if (source?.type === 'base64')
        return {
          type: 'file',
          file: {
            file_data: `data:${String(source.media_type)};base64,${String(source.data)}`,
            filename: typeof block.title === 'string' ? block.title : 'document',
          },
        };
      return undefined;
    default:
      return undefined;
  }
}
