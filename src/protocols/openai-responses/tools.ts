/**
 * A Responses request's tools as chat tools, and the way back from a chat tool name to the tool the client
 * declared. Tools come from `tools` and from `additional_tools` input items; `namespace` tools are flattened into
 * the tools they group. A `function` tool is a chat function as it is; a `custom` tool (free text in, no JSON) is
 * a chat function with one string parameter `input`, whose calls go back to the client as `custom_tool_call`
 * items. A chat name is the tool's own name, or `<namespace>__<name>` when two namespaces use the same name.
 * OpenAI's hosted tools (`web_search`, `file_search`, ...) run on OpenAI's servers only: elsewhere they are left
 * out, as clients such as Codex add them by default (a `tool_choice` that forces one is refused in to-chat.ts).
 */
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { GatewayError } from '../../errors/index.js';
import type { ToolDefinition } from '../../wire/index.js';
import { AdditionalToolsItemSchema, type ResponseRequest, type ResponseTool } from './schema.js';

const AdditionalTools = TypeCompiler.Compile(AdditionalToolsItemSchema);

/** The tool the client declared behind one chat tool name. */
export interface DeclaredTool {
  kind: 'function' | 'custom';
  name: string;
  namespace: string | undefined;
}

export interface ChatTools {
  definitions: ToolDefinition[];
  /** By chat name. */
  declared: Map<string, DeclaredTool>;
}

type NestedTool = NonNullable<ResponseTool['tools']>[number];

interface Flat {
  tool: NestedTool;
  namespace: string | undefined;
  param: string;
}

export function chatTools(request: ResponseRequest): ChatTools {
  const flat: Flat[] = [];
  request.tools?.forEach((tool, index) => flatten(flat, tool, `tools[${index}]`));
  if (typeof request.input !== 'string')
    request.input.forEach((item, index) => {
      if (item.type !== 'additional_tools' || !AdditionalTools.Check(item)) return;
      item.tools.forEach((tool, i) => flatten(flat, tool, `input[${index}].tools[${i}]`));
    });

  const counts = new Map<string, number>();
  for (const { tool } of flat) if (tool.name) counts.set(tool.name, (counts.get(tool.name) ?? 0) + 1);
  const definitions: ToolDefinition[] = [];
  const declared = new Map<string, DeclaredTool>();
  for (const { tool, namespace, param } of flat) {
    if (tool.type !== 'function' && tool.type !== 'custom') continue;
    const kind = tool.type;
    const name = tool.name;
    if (!name)
      throw new GatewayError('invalid_request', {
        message: `Missing required parameter: '${param}.name'.`,
        param: `${param}.name`,
      });
    const chatName = namespace && (counts.get(name) ?? 0) > 1 ? `${namespace}__${name}` : name;
    if (declared.has(chatName))
      throw new GatewayError('invalid_request', {
        message: `Tool names must be unique; '${chatName}' is declared twice`,
        param: `${param}.name`,
      });
    declared.set(chatName, { kind, name, namespace });
    definitions.push(kind === 'custom' ? customDefinition(chatName, tool) : functionDefinition(chatName, tool));
  }
  return { definitions, declared };
}

/** The chat name of a tool the client names (with its namespace, if any): what its earlier calls are called. */
export function chatNameOf(tools: ChatTools, name: string, namespace: string | undefined): string {
  for (const [chatName, tool] of tools.declared)
    if (tool.name === name && (namespace === undefined || tool.namespace === namespace)) return chatName;
  return name;
}

function flatten(flat: Flat[], tool: ResponseTool, param: string): void {
  if (tool.type !== 'namespace') {
    flat.push({ tool, namespace: undefined, param });
    return;
  }
  tool.tools?.forEach((nested, index) =>
    flat.push({ tool: nested, namespace: tool.name, param: `${param}.tools[${index}]` }),
  );
}

function functionDefinition(name: string, tool: NestedTool): ToolDefinition {
  return {
    type: 'function',
    function: {
      name,
      ...(tool.description != null ? { description: tool.description } : {}),
      ...(tool.parameters != null ? { parameters: tool.parameters } : {}),
      ...(tool.strict != null ? { strict: tool.strict } : {}),
    },
  };
}

/** A custom tool takes free text: one string argument `input`, its grammar (if any) told in the description. */
function customDefinition(name: string, tool: NestedTool): ToolDefinition {
  const format = tool.format;
  const grammar =
    format?.type === 'grammar' && typeof format.definition === 'string'
      ? `\n\nThe input must match this ${typeof format.syntax === 'string' ? format.syntax : ''} grammar:\n${format.definition}`
      : '';
  const description = `${tool.description ?? ''}\n\nThis tool takes free text, not JSON: put all of it, exactly as it should be read, in the string argument \`input\`.${grammar}`;
  return {
    type: 'function',
    function: {
      name,
      description: description.trim(),
      parameters: {
        type: 'object',
        properties: { input: { type: 'string', description: 'The free-text input of the tool' } },
        required: ['input'],
        additionalProperties: false,
      },
    },
  };
}

/** A custom tool's input from a chat call's arguments: `{"input": "..."}`, or the arguments as they are. */
export function customInput(args: string): string {
  try {
    const parsed: unknown = JSON.parse(args);
    if (typeof parsed === 'object' && parsed !== null) {
      const input: unknown = Reflect.get(parsed, 'input');
      if (typeof input === 'string') return input;
    }
  } catch {
    // Not JSON: the model wrote the free text itself.
  }
  return args;
}
