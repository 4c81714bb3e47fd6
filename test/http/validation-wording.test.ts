/**
 * One wording for a body that fails its schema, whichever edge validates it: the chat fast path (the gateway's
 * compiled TypeBox checker), the metered routes Fastify serves (the same checker, behind Fastify's body parser),
 * and the routes Fastify's own ajv validates (admin). The same kind of fault gets the same status, type, code and
 * message pattern, with `param` naming the field.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, startGateway, type TestGateway } from '../support/gateway.js';

let gw: TestGateway;
let keysPath: string;

beforeAll(async () => {
  gw = await startGateway();
  keysPath = `/admin/accounts/${(await gw.account()).id}/keys`;
});
afterAll(async () => {
  await gw?.close();
});

type Fault = 'missing' | 'wrong type' | 'not an object' | 'unknown enum value' | 'bad array item' | 'unknown field';

/** The message of each kind of fault; `{param}` stands for the field the answer names. */
const WORDING: Record<Fault, (param: string) => RegExp> = {
  missing: (param) => new RegExp(`^Missing required parameter: '${escape(param)}'\\.$`),
  'wrong type': (param) => new RegExp(`^Invalid value for '${escape(param)}': expected an? [a-z]+[^.]*\\.$`),
  'not an object': () => /^The request body must be a JSON object$/,
  'unknown enum value': (param) =>
    new RegExp(`^Invalid value for '${escape(param)}': expected one of '[^']+'(, '[^']+')+\\.$`),
  'bad array item': (param) => new RegExp(`^Invalid value for '${escape(param)}': expected [^.]+\\.$`),
  'unknown field': (param) => new RegExp(`^Unknown parameter: '${escape(param)}'\\.$`),
};

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

interface Row {
  fault: Fault;
  route: string;
  /** The raw JSON body. */
  body: string;
  /** The field the answer names (null for the body itself). */
  param: string | null;
}

const CHAT = '/v1/chat/completions';
/** The webhooks API validates with its own TypeBox schemas (webhooks/validation.ts). */
const WEBHOOKS = '/v1/webhooks';
const SECRET = 'a'.repeat(32);
const EVENT = '{"type":"llm.completion"}';
const hi = '[{"role":"user","content":"hi"}]';

const ROWS: Row[] = [
  // A required field is absent.
  { fault: 'missing', route: CHAT, body: `{"messages":${hi}}`, param: 'model' },
  { fault: 'missing', route: '/v1/embeddings', body: '{"input":"hi"}', param: 'model' },
  { fault: 'missing', route: '/v1/completions', body: '{"prompt":"hi"}', param: 'model' },
  { fault: 'missing', route: '/v1/responses', body: '{"input":"hi"}', param: 'model' },
  { fault: 'missing', route: CHAT, body: '{"model":"sandbox/echo"}', param: 'messages' },
  { fault: 'missing', route: '/v1/embeddings', body: '{"model":"sandbox/echo"}', param: 'input' },
  { fault: 'missing', route: '/v1/completions', body: '{"model":"sandbox/echo"}', param: 'prompt' },
  { fault: 'missing', route: '/v1/responses', body: '{"model":"sandbox/echo"}', param: 'input' },
  { fault: 'missing', route: '/admin/accounts', body: '{}', param: 'email' },
  { fault: 'missing', route: WEBHOOKS, body: `{"secret":"${SECRET}","events":[${EVENT}]}`, param: 'url' },
  // A field of the wrong type.
  { fault: 'wrong type', route: CHAT, body: `{"model":5,"messages":${hi}}`, param: 'model' },
  { fault: 'wrong type', route: '/v1/embeddings', body: '{"model":5,"input":"hi"}', param: 'model' },
  { fault: 'wrong type', route: '/v1/completions', body: '{"model":5,"prompt":"hi"}', param: 'model' },
  { fault: 'wrong type', route: '/v1/responses', body: '{"model":5,"input":"hi"}', param: 'model' },
  { fault: 'wrong type', route: '/admin/accounts', body: '{"email":5}', param: 'email' },
  { fault: 'wrong type', route: CHAT, body: '{"model":"sandbox/echo","messages":"hi"}', param: 'messages' },
  { fault: 'wrong type', route: '/admin/accounts', body: '{"email":"a@example.com","plan":5}', param: 'plan' },
  { fault: 'wrong type', route: WEBHOOKS, body: `{"url":5,"secret":"${SECRET}","events":[${EVENT}]}`, param: 'url' },
  // The body is not an object.
  ...[CHAT, '/v1/embeddings', '/v1/completions', '/v1/responses', '/admin/accounts', WEBHOOKS].flatMap((route) => [
    { fault: 'not an object' as const, route, body: '[]', param: null },
    { fault: 'not an object' as const, route, body: '"x"', param: null },
  ]),
  // A value outside an enum.
  {
    fault: 'unknown enum value',
    route: CHAT,
    body: '{"model":"sandbox/echo","messages":[{"role":"robot","content":"hi"}]}',
    param: 'messages[0].role',
  },
  {
    fault: 'unknown enum value',
    route: '/v1/embeddings',
    body: '{"model":"sandbox/echo","input":"hi","encoding_format":"hex"}',
    param: 'encoding_format',
  },
  {
    fault: 'unknown enum value',
    route: '/v1/responses',
    body: '{"model":"sandbox/echo","input":[{"role":"robot","content":"hi"}]}',
    param: 'input[0].role',
  },
  { fault: 'unknown enum value', route: 'keys', body: '{"environment":"prod"}', param: 'environment' },
  // A bad item of an array.
  { fault: 'bad array item', route: CHAT, body: '{"model":"sandbox/echo","messages":["hi"]}', param: 'messages[0]' },
  { fault: 'bad array item', route: '/v1/responses', body: '{"model":"sandbox/echo","input":[5]}', param: 'input[0]' },
  {
    fault: 'bad array item',
    route: '/v1/completions',
    body: '{"model":"sandbox/echo","prompt":[{}]}',
    param: 'prompt[0]',
  },
  { fault: 'bad array item', route: 'keys', body: '{"models":[5]}', param: 'models[0]' },
  // A field a strict schema does not allow.
  {
    fault: 'unknown field',
    route: '/admin/accounts',
    body: '{"email":"a@example.com","plann":"free"}',
    param: 'plann',
  },
  {
    fault: 'unknown field',
    route: WEBHOOKS,
    body: `{"url":"https://example.com/hook","secret":"${SECRET}","events":[${EVENT}],"retries":3}`,
    param: 'retries',
  },
];

async function post(route: string, body: string) {
  const path = route === 'keys' ? keysPath : route;
  const token = path.startsWith('/admin/') ? ADMIN_TOKEN : gw.firstKey;
  const response = await fetch(`${gw.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body,
  });
  return { status: response.status, error: ((await response.json()) as { error: Record<string, unknown> }).error };
}

describe('a body that fails its schema', () => {
  it('is answered in one wording on every edge', async () => {
    const differing: string[] = [];
    for (const row of ROWS) {
      const { status, error } = await post(row.route, row.body);
      const expected = {
        status: 400,
        type: 'invalid_request_error',
        code: 'invalid_request',
        param: row.param,
      };
      const got = { status, type: error.type, code: error.code, param: error.param };
      const message = String(error.message);
      const worded = WORDING[row.fault](row.param ?? '').test(message);
      if (JSON.stringify(got) !== JSON.stringify(expected) || !worded) {
        differing.push(`${row.fault} | POST ${row.route} ${row.body} -> ${status} ${JSON.stringify(error)}`);
      }
    }
    expect(differing).toEqual([]);
  });

  it('words the expectation from the schema, the same for either validator', async () => {
    const chat = await post(CHAT, `{"model":5,"messages":${hi}}`);
    const admin = await post('/admin/accounts', '{"email":5}');
    expect(chat.error.message).toBe("Invalid value for 'model': expected a string of at least 1 character.");
    expect(admin.error.message).toBe("Invalid value for 'email': expected a string of at least 3 characters.");
    const role = await post(CHAT, '{"model":"sandbox/echo","messages":[{"role":"robot","content":"hi"}]}');
    expect(role.error.message).toBe(
      "Invalid value for 'messages[0].role': expected one of 'system', 'developer', 'user', 'assistant', 'tool', 'function'.",
    );
    const environment = await post('keys', '{"environment":"prod"}');
    expect(environment.error.message).toBe("Invalid value for 'environment': expected one of 'live', 'test'.");
  });
});
