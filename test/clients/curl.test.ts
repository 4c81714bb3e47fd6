/**
 * Plain `curl -N` against a running gateway: the raw SSE lines of a streamed answer as they arrive, ending with
 * `data: [DONE]`, and the contract's JSON error envelope (with status and headers) for a failed request.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { account, brokeKey, clientGatewayPerFile, gateway, MODEL, rateLimitedKey } from './support.js';

clientGatewayPerFile();

interface CurlRun {
  exitCode: number | null;
  /** stdout as the reads arrived. */
  reads: string[];
  stdout: string;
  stderr: string;
}

function curl(args: string[]): Promise<CurlRun> {
  return new Promise((resolve, reject) => {
    const child = spawn('curl', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const reads: string[] = [];
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => reads.push(text));
    child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    child.on('error', reject);
    child.on('close', (exitCode) => resolve({ exitCode, reads, stdout: reads.join(''), stderr }));
  });
}

/** `curl -i` output split into status, lower-cased headers and body. */
function parseResponse(stdout: string): { status: number; headers: Record<string, string>; body: string } {
  const split = stdout.indexOf('\r\n\r\n');
  const [statusLine, ...headerLines] = stdout.slice(0, split).split('\r\n');
  const headers = Object.fromEntries(
    headerLines.map((line) => {
      const colon = line.indexOf(':');
      return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()];
    }),
  );
  return { status: Number(statusLine!.split(' ')[1]), headers, body: stdout.slice(split + 4) };
}

const chatBody = (content: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ model: MODEL, messages: [{ role: 'user', content }], ...extra });

describe('curl', () => {
  it('curl -N streams SSE: data lines with chunks, usage (with cost) last, then data: [DONE]', async () => {
    const run = await curl([
      '-sS',
      '-N',
      '-i',
      `${gateway.baseURL}/chat/completions`,
      '-H',
      `Authorization: Bearer ${account.key}`,
      '-H',
      'Content-Type: application/json',
      '-d',
      chatBody('Plain curl sees every event.', { stream: true, stream_options: { include_usage: true } }),
    ]);
    expect(run.exitCode, run.stderr).toBe(0);
    const { status, headers, body } = parseResponse(run.stdout);
    expect(status).toBe(200);
    expect(headers['content-type']).toMatch(/^text\/event-stream/);
    expect(headers['x-request-id']).toMatch(/^req_/);

    // Events are `data: <json>` lines separated by blank lines; nothing else in this short stream.
    const events = body.split('\n\n').filter((event) => event !== '');
    expect(events.every((event) => event.startsWith('data: ') && !event.includes('\n'))).toBe(true);
    expect(events.at(-1)).toBe('data: [DONE]');
    expect(body.endsWith('data: [DONE]\n\n')).toBe(true);

    const chunks = events.slice(0, -1).map((event) => JSON.parse(event.slice('data: '.length)));
    expect(chunks.every((chunk) => chunk.object === 'chat.completion.chunk' && chunk.model === MODEL)).toBe(true);
    const text = chunks.map((chunk) => chunk.choices[0]?.delta?.content ?? '').join('');
    expect(text).toBe('Plain curl sees every event.');
    expect(chunks.at(-2).choices[0].finish_reason).toBe('stop');
    const usage = chunks.at(-1).usage;
    expect(chunks.at(-1).choices).toEqual([]);
    expect(usage.total_tokens).toBe(usage.prompt_tokens + usage.completion_tokens);
    expect(usage.cost).toBeGreaterThan(0);
  });

  it('a failed request, streamed or not, is the JSON error envelope with its status (not SSE)', async () => {
    const run = await curl([
      '-sS',
      '-N',
      '-i',
      `${gateway.baseURL}/chat/completions`,
      '-H',
      'Content-Type: application/json',
      '-d',
      chatBody('no key', { stream: true }),
    ]);
    expect(run.exitCode, run.stderr).toBe(0);
    const missing = parseResponse(run.stdout);
    expect(missing.status).toBe(401);
    expect(missing.headers['content-type']).toMatch(/^application\/json/);
    expect(JSON.parse(missing.body)).toEqual({
      error: { message: expect.any(String), type: 'authentication_error', code: 'missing_api_key', param: null },
    });

    const broke = parseResponse(
      (
        await curl([
          '-sS',
          '-i',
          `${gateway.baseURL}/chat/completions`,
          '-H',
          `Authorization: Bearer ${await brokeKey(gateway)}`,
          '-H',
          'Content-Type: application/json',
          '-d',
          chatBody('hi'),
        ])
      ).stdout,
    );
    expect(broke.status).toBe(402);
    expect(JSON.parse(broke.body).error).toMatchObject({
      type: 'payment_required',
      code: 'insufficient_credits',
      param: null,
    });
  });

  it('a 429 carries Retry-After and the same retry_after in the envelope', async () => {
    const key = await rateLimitedKey(gateway);
    const run = await curl([
      '-sS',
      '-i',
      `${gateway.baseURL}/chat/completions`,
      '-H',
      `Authorization: Bearer ${key}`,
      '-H',
      'Content-Type: application/json',
      '-d',
      chatBody('hi'),
    ]);
    const limited = parseResponse(run.stdout);
    expect(limited.status).toBe(429);
    const { error } = JSON.parse(limited.body);
    expect(error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit_exceeded', param: null });
    expect(error.retry_after).toBeGreaterThanOrEqual(1);
    expect(limited.headers['retry-after']).toBe(String(error.retry_after));
    expect(limited.headers['x-ratelimit-limit-requests']).toBe('1');
    expect(limited.headers['x-ratelimit-remaining-requests']).toBe('0');
  });
});
