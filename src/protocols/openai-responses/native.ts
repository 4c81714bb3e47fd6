/**
 * Reading OpenAI's own Responses (the native path) for metering: the usage it reports, the text it delivered
 * (counted when it reports none), and the Response as the client gets it (the catalog's model id, the billed
 * usage with its cost).
 */
import { isObject } from '../../wire/index.js';
import type { ResponseRequest } from './schema.js';

type Json = Record<string, unknown>;

/** A field's text: the string, or '' for anything else. */
const text = (value: unknown): string => (typeof value === 'string' ? value : '');

/** The text a stream event delivers: output text, function-call arguments and custom tools' input. */
export function deliveredText(event: Json): string {
  const { type, delta } = event;
  if (
    type === 'response.output_text.delta' ||
    type === 'response.function_call_arguments.delta' ||
    type === 'response.custom_tool_call_input.delta'
  )
    return typeof delta === 'string' ? delta : '';
  return '';
}

/**
 * The text of a Response's output: its messages' text, its refusals, its function calls (name and arguments) and
 * its custom tool calls (name and input).
 */
export function outputText(response: Json): string {
  const output = Array.isArray(response.output) ? response.output : [];
  const texts: string[] = [];
  for (const item of output) {
    if (!isObject(item)) continue;
    if (item.type === 'function_call') texts.push(text(item.name) + text(item.arguments));
    if (item.type === 'custom_tool_call') texts.push(text(item.name) + text(item.input));
    if (!Array.isArray(item.content)) continue;
    for (const part of item.content) {
      if (isObject(part) && typeof part.text === 'string') texts.push(part.text);
      else if (isObject(part) && typeof part.refusal === 'string') texts.push(part.refusal);
    }
  }
  return texts.join('');
}

/**
 * The Response as the client gets it: the catalog's model id, and the billed tokens with their cost. The token
 * details OpenAI's schema requires are 0 where OpenAI reported none (none were billed).
 */
export function billedResponse(
  response: Json,
  model: string,
  billed: { promptTokens: number; completionTokens: number; cost: number },
): Json {
  const usage = isObject(response.usage) ? response.usage : {};
  const inputDetails = isObject(usage.input_tokens_details) ? usage.input_tokens_details : {};
  const outputDetails = isObject(usage.output_tokens_details) ? usage.output_tokens_details : {};
  return {
    ...response,
    model,
    usage: {
      ...usage,
      input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0, ...inputDetails },
      output_tokens_details: { reasoning_tokens: 0, ...outputDetails },
      input_tokens: billed.promptTokens,
      output_tokens: billed.completionTokens,
      total_tokens: billed.promptTokens + billed.completionTokens,
      cost: billed.cost,
    },
  };
}

/** A stream event as the client gets it: a Response it carries names the catalog's model. */
export function withModel(event: Json, model: string): Json {
  return isObject(event.response) ? { ...event, response: { ...event.response, model } } : event;
}

/** The prompt's text (llm.* events): the instructions and every text of the input. */
export function inputText(request: ResponseRequest): string {
  const texts: string[] = request.instructions ? [request.instructions] : [];
  if (typeof request.input === 'string') texts.push(request.input);
  else
    for (const item of request.input) {
      const content: unknown = item.content ?? item.output;
      if (typeof content === 'string') texts.push(content);
      else if (Array.isArray(content))
        for (const part of content) if (isObject(part) && typeof part.text === 'string') texts.push(part.text);
    }
  return texts.join('\n');
}

/** The response id a Response (or the event carrying it) names. */
export function responseId(json: Json): string | undefined {
  const response = isObject(json.response) ? json.response : json;
  return typeof response.id === 'string' ? response.id : undefined;
}
