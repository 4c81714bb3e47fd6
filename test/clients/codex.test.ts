/**
 * Codex CLI's Responses requests (a recorded first turn, reduced: test/clients/fixtures/codex-request.json) replayed
 * through the official `openai` package's `client.responses.create` with `stream: true`, on a model translated
 * through chat: its tools, declared in an `additional_tools` item and grouped in namespaces, reach the chat server
 * as chat tools; a call of its custom tool `exec` comes back as a `custom_tool_call` with the free text, and the
 * next turn (the call and its `custom_tool_call_output`, a reasoning item) is answered. A test key gets the same
 * body answered by the sandbox.
 */
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type TestGateway } from '../support/gateway.js';
import { startMockOpenAI, type Behavior, type MockOpenAI } from '../support/mock-openai.js';

const MODEL = 'mistral-small-2603';
const EXEC_INPUT = 'text("hello from exec")';

let gateway: TestGateway;
let mistral: MockOpenAI;
let account: { id: string; key: string };

/** A chat server that runs Codex's `exec` tool first, and answers from its output once it has it. */
function agent(body: any): Behavior | undefined {
  const last = body.messages.at(-1);
  if (last.role === 'tool') return { kind: 'ok', content: `Done: ${last.content}`, chunks: 3 };
  return {
    kind: 'ok',
    toolCalls: [{ id: 'call_exec1', name: 'exec', arguments: JSON.stringify({ input: EXEC_INPUT }) }],
  };
}

beforeAll(async () => {
  mistral = await startMockOpenAI({ apiKey: 'mk-codex', route: agent });
  gateway = await startGateway({ env: { MISTRAL_API_KEY: 'mk-codex', MISTRAL_BASE_URL: mistral.url } });
  account = await gateway.account();
});
afterAll(async () => {
  await gateway?.close();
  await mistral?.close();
});

/** Codex's first turn, on `model`. */
function codexBody(model: string): OpenAI.Responses.ResponseCreateParamsStreaming {
  const recorded = JSON.parse(readFileSync(new URL('fixtures/codex-request.json', import.meta.url), 'utf8'));
  return { ...recorded, model, stream: true };
}

async function events(key: string, body: OpenAI.Responses.ResponseCreateParamsStreaming) {
  const openai = new OpenAI({ baseURL: gateway.baseURL, apiKey: key, maxRetries: 0 });
  const seen: OpenAI.Responses.ResponseStreamEvent[] = [];
  for await (const event of await openai.responses.create(body)) seen.push(event);
  return seen;
}

function completed(seen: OpenAI.Responses.ResponseStreamEvent[]): OpenAI.Responses.Response {
  const last = seen.at(-1);
  if (last?.type !== 'response.completed') throw new Error(`stream ended with ${last?.type}`);
  return last.response;
}

describe('Codex CLI through the translated Responses path', () => {
  it("streams a call of its custom exec tool as custom_tool_call events; the chat server got Codex's tools", async () => {
    const seen = await events(account.key, codexBody(MODEL));
    const types = seen.map((event) => event.type);
    expect(types).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.custom_tool_call_input.delta',
      'response.custom_tool_call_input.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(seen[2]).toMatchObject({
      item: { type: 'custom_tool_call', call_id: 'call_exec1', name: 'exec', namespace: 'functions' },
    });
    expect(seen[4]).toMatchObject({ input: EXEC_INPUT });
    expect(completed(seen).output).toEqual([
      expect.objectContaining({
        type: 'custom_tool_call',
        call_id: 'call_exec1',
        name: 'exec',
        namespace: 'functions',
        input: EXEC_INPUT,
        status: 'completed',
      }),
    ]);

    const upstream = mistral.requests.at(-1)!.body;
    expect(upstream.tools.map((tool: any) => tool.function.name)).toEqual(['exec', 'wait', 'sleep']);
    expect(upstream.tools[0].function.parameters.required).toEqual(['input']);
    expect(upstream.messages.map((m: any) => m.role)).toEqual(['developer', 'user', 'user']);
    for (const field of ['include', 'prompt_cache_key', 'client_metadata', 'store', 'text', 'reasoning'])
      expect(upstream).not.toHaveProperty(field);
  });

  it('answers the next turn: the custom call and its output go upstream as a tool call and a tool message', async () => {
    const first = completed(await events(account.key, codexBody(MODEL))).output;
    const body = codexBody(MODEL);
    body.input = [
      ...(Array.isArray(body.input) ? body.input : []),
      { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'opaque' },
      ...first.filter((item) => item.type === 'custom_tool_call'),
      { type: 'custom_tool_call_output', call_id: 'call_exec1', output: 'Script completed\nhello from exec' },
    ];
    const seen = await events(account.key, body);
    const text = seen.flatMap((event) => (event.type === 'response.output_text.delta' ? [event.delta] : [])).join('');
    expect(text).toBe('Done: Script completed\nhello from exec');
    expect(completed(seen).usage).toMatchObject({
      input_tokens: expect.any(Number),
      output_tokens: expect.any(Number),
    });
    expect(mistral.requests.at(-1)!.body.messages.slice(-2)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_exec1',
            type: 'function',
            function: { name: 'exec', arguments: JSON.stringify({ input: EXEC_INPUT }) },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_exec1', content: 'Script completed\nhello from exec' },
    ]);
  });

  it('a test key gets the same body answered by the sandbox', async () => {
    const testKey = await gateway.key(account.id, { environment: 'test' });
    const sent = mistral.requests.length;
    const response = completed(await events(testKey.key, codexBody(MODEL)));
    expect(response.status).toBe('completed');
    expect(response.output.length).toBeGreaterThan(0);
    expect(mistral.requests.length).toBe(sent);
  });
});
