/** OpenAI chat request -> Gemini generateContent request (https://ai.google.dev/api/generate-content). */
import { isImagePart, mediaTypeOf, parseDataUrl, textOf, unsupported } from '../translate.js';
import { isObject } from '../../wire/index.js';
import type { ChatMessage, ChatRequest, ContentPart, ToolChoice } from '../types.js';
import { SKIP_SIGNATURE, requiresSignature, signatureOf } from './signature.js';

type Part = Record<string, unknown>;
interface Content {
  role: 'user' | 'model';
  parts: Part[];
}

export function toGeminiRequest(provider: string, request: ChatRequest): Record<string, unknown> {
  const system: Part[] = [];
  const contents: Content[] = [];
  /** Gemini answers a function by name, OpenAI by call id: the names of the calls seen so far. */
  const callNames = new Map<string, string>();
  const push = (role: Content['role'], parts: Part[]) => {
    if (parts.length === 0) return;
    const last = contents[contents.length - 1];
    if (last?.role === role) last.parts.push(...parts);
    else contents.push({ role, parts });
  };
  request.messages.forEach((message, index) => {
    switch (message.role) {
      case 'system':
      case 'developer': {
        const text = textOf(message.content);
        if (text) system.push({ text });
        return;
      }
      case 'assistant':
        return push('model', modelParts(message, callNames, requiresSignature(request.model)));
      case 'tool': {
        const name = callNames.get(message.tool_call_id ?? '') ?? message.name ?? message.tool_call_id ?? 'function';
        return push('user', [{ functionResponse: { name, response: functionResponse(textOf(message.content)) } }]);
      }
      default:
        return push('user', userParts(provider, message, index));
    }
  });

  const generationConfig: Record<string, unknown> = {};
  const maxTokens = request.max_completion_tokens ?? request.max_tokens;
  if (maxTokens != null) generationConfig.maxOutputTokens = maxTokens;
  if (request.temperature != null) generationConfig.temperature = request.temperature;
  if (request.top_p != null) generationConfig.topP = request.top_p;
  if (request.stop != null)
    generationConfig.stopSequences = typeof request.stop === 'string' ? [request.stop] : request.stop;
  if (request.n != null && request.n > 1) generationConfig.candidateCount = request.n;
  if (request.seed != null) generationConfig.seed = request.seed;
  if (typeof request.presence_penalty === 'number') generationConfig.presencePenalty = request.presence_penalty;
  if (typeof request.frequency_penalty === 'number') generationConfig.frequencyPenalty = request.frequency_penalty;
  const format = request.response_format;
  if (format && format.type !== 'text') {
    generationConfig.responseMimeType = 'application/json';
    const schema = format.json_schema?.schema;
    if (schema) generationConfig.responseJsonSchema = schema;
  }

  const body: Record<string, unknown> = { contents };
  if (system.length) body.systemInstruction = { parts: system };
  if (request.tools?.length) {
    body.tools = [
      {
        functionDeclarations: request.tools.map((tool) => ({
          name: tool.function.name,
          ...(tool.function.description ? { description: tool.function.description } : {}),
          ...(tool.function.parameters ? { parametersJsonSchema: tool.function.parameters } : {}),
        })),
      },
    ];
    const config = functionCallingConfig(request.tool_choice);
    if (config) body.toolConfig = { functionCallingConfig: config };
  }
  if (Object.keys(generationConfig).length) body.generationConfig = generationConfig;
  return body;
}

function functionCallingConfig(choice: ToolChoice | undefined): Record<string, unknown> | undefined {
  if (choice === undefined || choice === 'auto') return undefined;
  if (choice === 'required') return { mode: 'ANY' };
  if (choice === 'none') return { mode: 'NONE' };
  return { mode: 'ANY', allowedFunctionNames: [choice.function.name] };
}

/** Gemini wants an object: a JSON object result unchanged, anything else under `content`. */
function functionResponse(text: string): Record<string, unknown> {
  try {
    const parsed: unknown = JSON.parse(text);
    if (isObject(parsed)) return parsed;
    return { content: parsed };
  } catch {
    return { content: text };
  }
}

function modelParts(message: ChatMessage, callNames: Map<string, string>, signed: boolean): Part[] {
  const parts: Part[] = [];
  const text = textOf(message.content);
  if (text) parts.push({ text });
  for (const [i, call] of (message.tool_calls ?? []).entries()) {
    callNames.set(call.id, call.function.name);
    let args: unknown;
    try {
      args = JSON.parse(call.function.arguments || '{}');
    } catch {
      args = {};
    }
    // The signature Gemini gave the call; the first call of a turn must carry one for Gemini 3.
    const signature = signatureOf(call.id) ?? (signed && i === 0 ? SKIP_SIGNATURE : undefined);
    parts.push({
      functionCall: { name: call.function.name, args },
      ...(signature ? { thoughtSignature: signature } : {}),
    });
  }
  return parts;
}

function userParts(provider: string, message: ChatMessage, index: number): Part[] {
  const { content } = message;
  if (typeof content === 'string') return content ? [{ text: content }] : [];
  return (content ?? []).map((part, partIndex) => userPart(provider, part, `messages[${index}].content[${partIndex}]`));
}

function userPart(provider: string, part: ContentPart, param: string): Part {
  if (part.type === 'text') return { text: String(part.text) };
  if (isImagePart(part)) {
    const url = String(part.image_url.url);
    const inline = parseDataUrl(url);
    if (inline) return { inlineData: { mimeType: inline.mediaType, data: inline.data } };
    if (/^https?:\/\//i.test(url)) return { fileData: { mimeType: mediaTypeOf(url), fileUri: url } };
    throw unsupported(provider, `${provider} takes images from http(s) URLs or base64 data URLs`, param);
  }
  throw unsupported(provider, `${provider} does not accept content parts of type '${part.type}'`, param);
}
