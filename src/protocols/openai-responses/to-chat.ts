/**
 * A Responses request as the internal chat request, for every provider but OpenAI itself: instructions become a
 * system message, items become messages (function and custom tool calls an assistant's tool calls, their outputs
 * tool messages), function and custom tools chat tools (`tools.ts`), `text.format` the response format. What chat
 * cannot say is refused with 400.
 */
import { GatewayError } from '../../errors/index.js';
import type { ChatRequest } from '../../providers/index.js';
import type { ChatMessage, ContentPart, ToolChoice } from '../../wire/index.js';
import type {
  CustomToolCallItem,
  FunctionCallItem,
  FunctionCallOutputItem,
  InputItem,
  MessageItem,
  ResponseContentPart,
  ResponseRequest,
  TextFormat,
} from './schema.js';
import { chatNameOf, chatTools, type ChatTools } from './tools.js';

export function toChatRequest(request: ResponseRequest): ChatRequest {
  const tools = chatTools(request);
  const messages: ChatMessage[] = [];
  if (request.instructions) messages.push({ role: 'system', content: request.instructions });
  if (typeof request.input === 'string') messages.push({ role: 'user', content: request.input });
  else request.input.forEach((item, index) => addItem(messages, item, tools, `input[${index}]`));
  if (messages.length === 0)
    throw new GatewayError('invalid_request', { message: "'input' has no message to answer", param: 'input' });

  const chat: ChatRequest = { model: request.model, messages };
  if (tools.definitions.length) chat.tools = tools.definitions;
  if (request.tool_choice !== undefined) chat.tool_choice = toolChoice(request.tool_choice, tools);
  if (request.text?.format) chat.response_format = responseFormat(request.text.format);
  if (request.reasoning?.effort) chat.reasoning_effort = request.reasoning.effort;
  if (request.max_output_tokens != null) chat.max_tokens = request.max_output_tokens;
  if (request.temperature != null) chat.temperature = request.temperature;
  if (request.top_p != null) chat.top_p = request.top_p;
  if (request.parallel_tool_calls != null && chat.tools) chat.parallel_tool_calls = request.parallel_tool_calls;
  if (request.user !== undefined) chat.user = request.user;
  if (request.stream) {
    chat.stream = true;
    chat.stream_options = { include_usage: true };
  }
  return chat;
}

function addItem(messages: ChatMessage[], item: InputItem, tools: ChatTools, param: string): void {
  if (isMessage(item)) {
    messages.push(message(item, param));
    return;
  }
  if (isFunctionCall(item) || isCustomToolCall(item)) {
    const name = chatNameOf(tools, item.name, item.namespace);
    const args = item.type === 'function_call' ? item.arguments : JSON.stringify({ input: item.input });
    const call = { id: item.call_id, type: 'function' as const, function: { name, arguments: args } };
    // Parallel calls are one assistant turn in chat: a call follows the assistant message before it.
    const last = messages.at(-1);
    if (last?.role === 'assistant') last.tool_calls = [...(last.tool_calls ?? []), call];
    else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
    return;
  }
  if (isFunctionCallOutput(item)) {
    messages.push({ role: 'tool', tool_call_id: item.call_id, content: outputText(item.output, `${param}.output`) });
    return;
  }
  // A reasoning model's earlier thoughts: chat has no place for them, and the answer does not need them. Declared
  // tools are already among chat's tools.
  if (item.type === 'reasoning' || item.type === 'additional_tools') return;
  throw new GatewayError('invalid_request', {
    message: `Input items of type '${item.type}' are only supported when the model is served by OpenAI itself`,
    param: `${param}.type`,
  });
}

const isMessage = (item: InputItem): item is MessageItem => item.type === undefined || item.type === 'message';
const isFunctionCall = (item: InputItem): item is FunctionCallItem => item.type === 'function_call';
const isCustomToolCall = (item: InputItem): item is CustomToolCallItem => item.type === 'custom_tool_call';
const isFunctionCallOutput = (item: InputItem): item is FunctionCallOutputItem =>
  item.type === 'function_call_output' || item.type === 'custom_tool_call_output';

function message(item: MessageItem, param: string): ChatMessage {
  const { role } = item;
  if (typeof item.content === 'string') return { role, content: item.content };
  if (role === 'assistant') return { role, content: outputText(item.content, `${param}.content`) };
  return { role, content: item.content.map((part, i) => contentPart(part, `${param}.content[${i}]`)) };
}

function contentPart(part: ResponseContentPart, param: string): ContentPart {
  switch (part.type) {
    case 'input_text':
    case 'output_text':
      return { type: 'text', text: part.text };
    case 'refusal':
      return { type: 'text', text: part.refusal };
    case 'input_image':
      if (!part.image_url)
        throw new GatewayError('invalid_request', {
          message: 'Images by file_id are only supported when the model is served by OpenAI itself; send image_url',
          param: `${param}.image_url`,
        });
      return { type: 'image_url', image_url: { url: part.image_url, ...(part.detail ? { detail: part.detail } : {}) } };
    case 'input_file': {
      const file = { file_data: part.file_data, file_id: part.file_id ?? undefined, filename: part.filename };
      return { type: 'file', file };
    }
  }
}

/** The text of an assistant's content or a function's output (text parts joined). */
function outputText(content: string | ResponseContentPart[], param: string): string {
  if (typeof content === 'string') return content;
  return content
    .map((part, i) => {
      if (part.type === 'input_text' || part.type === 'output_text') return part.text;
      if (part.type === 'refusal') return part.refusal;
      throw new GatewayError('invalid_request', {
        message: `Content of type '${part.type}' cannot be sent here to this model`,
        param: `${param}[${i}]`,
      });
    })
    .join('');
}

function toolChoice(choice: NonNullable<ResponseRequest['tool_choice']>, tools: ChatTools): ToolChoice {
  if (typeof choice === 'string') return choice;
  if ((choice.type === 'function' || choice.type === 'custom') && choice.name) {
    const namespace = typeof choice.namespace === 'string' ? choice.namespace : undefined;
    return { type: 'function', function: { name: chatNameOf(tools, choice.name, namespace) } };
  }
  throw new GatewayError('invalid_request', {
    message: `tool_choice of type '${choice.type}' is only supported when the model is served by OpenAI itself`,
    param: 'tool_choice',
  });
}

function responseFormat(format: TextFormat): NonNullable<ChatRequest['response_format']> {
  if (format.type !== 'json_schema') return { type: format.type };
  const { name, schema, description, strict } = format;
  return {
    type: 'json_schema',
    json_schema: { name, schema, ...(description ? { description } : {}), ...(strict != null ? { strict } : {}) },
  };
}
