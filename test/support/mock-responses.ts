/**
 * OpenAI's Responses API (`POST /v1/responses`) for the mock OpenAI server, in the format openai-node's types
 * document (src/resources/responses/responses.ts): a Response object, or its typed SSE events (`event: <type>`,
 * each with `sequence_number`) ending with `response.completed`. Usage: input tokens ~ a quarter of the input's
 * JSON length, output tokens one per word. Stored responses can be continued with `previous_response_id`; an
 * unknown one is OpenAI's 404.
 */
import type { ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

export interface ResponsesBehavior {
  kind: string;
  content?: string;
  chunks?: number;
  delayMs?: number;
  usage?: boolean;
  toolCalls?: Array<{ name: string; arguments: string; id?: string }>;
  afterChunks?: number;
  status?: number;
  message?: string;
}

let counter = 0;

export async function serveResponses(
  behavior: ResponsesBehavior,
  request: any,
  res: ServerResponse,
  stored: Set<string>,
  sendError: (
    res: ServerResponse,
    e: { status: number; message?: string; param?: string | null; code?: string },
  ) => void,
): Promise<void> {
  if (typeof request?.model !== 'string' || request.input === undefined)
    return sendError(res, { status: 400, message: "Missing required parameter: 'input'.", param: 'input' });
  if (request.previous_response_id && !stored.has(request.previous_response_id))
    return sendError(res, {
      status: 404,
      message: `Previous response with id '${request.previous_response_id}' not found.`,
      param: 'previous_response_id',
      code: 'previous_response_not_found',
    });
  if (behavior.kind === 'hang') return;
  if (behavior.kind === 'error') return sendError(res, { status: behavior.status ?? 500, message: behavior.message });
  const id = `resp_mock${++counter}`;
  if (request.store !== false) stored.add(id);
  const text = behavior.content ?? 'Hello from the mock upstream.';
  const words = behavior.toolCalls
    ? behavior.toolCalls.map((call) => call.arguments)
    : (text.match(/\s*\S+/g) ?? [text]);
  const inputTokens = Math.ceil(JSON.stringify([request.instructions ?? '', request.input]).length / 4);
  const outputTokens = behavior.toolCalls
    ? behavior.toolCalls.reduce((sum, call) => sum + call.arguments.split(/\s+/).length, 0)
    : words.length;
  const usage = {
    input_tokens: inputTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: inputTokens + outputTokens,
  };
  const output: any[] = behavior.toolCalls
    ? behavior.toolCalls.map((call, i) => ({
        type: 'function_call',
        id: `fc_mock${counter}_${i}`,
        call_id: call.id ?? `call_mock_${i}`,
        name: call.name,
        arguments: call.arguments,
        status: 'completed',
      }))
    : [
        {
          type: 'message',
          id: `msg_mock${counter}`,
          status: 'completed',
          role: 'assistant',
          content: [{ type: 'output_text', text, annotations: [] }],
        },
      ];
  const response = (status: string, done: boolean) => ({
    id,
    object: 'response',
    created_at: Math.floor(Date.now() / 1000),
    status,
    error: null,
    incomplete_details: null,
    instructions: request.instructions ?? null,
    max_output_tokens: request.max_output_tokens ?? null,
    model: `${request.model}-2026-01-01`,
    output: done ? output : [],
    parallel_tool_calls: true,
    previous_response_id: request.previous_response_id ?? null,
    store: request.store ?? true,
    temperature: 1,
    text: request.text ?? { format: { type: 'text' } },
    tool_choice: request.tool_choice ?? 'auto',
    tools: request.tools ?? [],
    top_p: 1,
    usage: done && behavior.usage !== false ? usage : null,
  });
  if (!request.stream) {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(response('completed', true)));
    return;
  }

  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
  let sequence = 0;
  const send = (type: string, fields: object) =>
    new Promise<void>((resolve) => {
      if (res.destroyed) return resolve();
      const event = { type, sequence_number: sequence++, ...fields };
      res.write(`event: ${type}\ndata: ${JSON.stringify(event)}\n\n`, () => resolve());
    });
  await send('response.created', { response: response('in_progress', false) });
  await send('response.in_progress', { response: response('in_progress', false) });
  let sent = 0;
  for (const [index, item] of output.entries()) {
    const place = { item_id: item.id, output_index: index };
    if (item.type === 'message') {
      await send('response.output_item.added', {
        output_index: index,
        item: { ...item, status: 'in_progress', content: [] },
      });
      await send('response.content_part.added', {
        ...place,
        content_index: 0,
        part: { type: 'output_text', text: '', annotations: [] },
      });
      for (const word of words) {
        if (behavior.kind === 'cut' && sent === (behavior.afterChunks ?? 2)) return void res.socket?.destroy();
        if (behavior.kind === 'stream-error' && sent === (behavior.afterChunks ?? 2)) {
          await send('error', {
            code: 'server_error',
            message: behavior.message ?? 'The server had an error.',
            param: null,
          });
          return void res.end();
        }
        if (behavior.delayMs) await sleep(behavior.delayMs);
        await send('response.output_text.delta', { ...place, content_index: 0, delta: word, logprobs: [] });
        sent++;
      }
      await send('response.output_text.done', { ...place, content_index: 0, text, logprobs: [] });
      await send('response.content_part.done', {
        ...place,
        content_index: 0,
        part: { type: 'output_text', text, annotations: [] },
      });
    } else {
      await send('response.output_item.added', {
        output_index: index,
        item: { ...item, arguments: '', status: 'in_progress' },
      });
      await send('response.function_call_arguments.delta', { ...place, delta: item.arguments });
      await send('response.function_call_arguments.done', { ...place, name: item.name, arguments: item.arguments });
    }
    await send('response.output_item.done', { output_index: index, item });
  }
  await send('response.completed', { response: response('completed', true) });
  res.end();
}
