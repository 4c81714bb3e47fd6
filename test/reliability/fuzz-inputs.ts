/**
 * Seeded generator of malformed requests for the fuzz test: every request it makes is invalid in at least one
 * way the gateway must refuse with a 4xx (broken JSON, wrong types, huge strings, deep nesting, unicode edge
 * cases, bad headers, wrong content types, oversized bodies), so any 2xx, 5xx or silence is a finding.
 */

export interface RawRequest {
  kind: string;
  method: string;
  path: string;
  headers: Array<[string, string]>;
  /** Bytes of the body (Content-Length is set from it unless `declaredLength` says otherwise). */
  body?: Buffer;
  /** Send this Content-Length instead (a body shorter than announced, with `stall`: a slow body). */
  declaredLength?: number;
  /** Send the body in small pieces, then stop sending with the connection open. */
  stall?: boolean;
}

/** mulberry32: small, fast, reproducible. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const UNICODE = [
  '\ud800',
  '\udfff',
  '\ud83d',
  '\u0000',
  '\u202e',
  '\u200f',
  '\u2066',
  '\ufeff',
  '\uffff',
  '𝕏',
  'ﷺ',
  'e\u0301',
  '\u0085',
  '\u2028',
];
const JUNK_BYTES = [
  Buffer.from([0xff, 0xfe]),
  Buffer.from([0xc0, 0x80]),
  Buffer.from([0xed, 0xa0, 0x80]),
  Buffer.from([0xf8, 0x88, 0x80, 0x80, 0x80]),
  Buffer.from([0x00]),
];

export function generator(seed: number, keys: { live: string; revoked: string; readOnly: string }, bodyLimit: number) {
  const random = rng(seed);
  const int = (n: number) => Math.floor(random() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)]!;
  const weird = (length: number) => Array.from({ length }, () => pick(UNICODE) + (random() < 0.5 ? 'x' : '')).join('');
  const valid = () => ({
    model: 'sandbox/echo',
    messages: [{ role: 'user', content: random() < 0.3 ? weird(8) : 'hello' }] as unknown[],
  });
  const auth = (): Array<[string, string]> => [['authorization', `Bearer ${keys.live}`]];
  const json = (body: Buffer | string, headers = auth()): RawRequest => ({
    kind: '',
    method: 'POST',
    path: '/v1/chat/completions',
    headers: [...headers, ['content-type', 'application/json']],
    body: Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8'),
  });

  /** One field set to a value the schema refuses. */
  const wrongTypes: Array<(b: Record<string, unknown>) => void> = [
    (b) => (b.model = pick([42, null, [], {}, true, ''])),
    (b) => (b.messages = pick(['hi', 7, null, {}, [], [1, 2], [null], [{ content: 'no role' }]])),
    (b) => (b.messages = [{ role: pick(['wizard', '', 'USER', weird(5), 3, null]), content: 'x' }]),
    (b) =>
      (b.messages = [
        {
          role: 'user',
          content: pick([5, true, { text: 'x' }, [{ type: 'text' }], [{ type: '' }], [{ text: 'no type' }]]),
        },
      ]),
    (b) => (b.max_tokens = pick(['10', -1, 0, 1.5, 'Infinity', [], {}, true])),
    (b) => (b.max_completion_tokens = pick([0, -5, 2.5, '7'])),
    (b) => (b.n = pick([0, 129, 1.1, '2', -1])),
    (b) => (b.temperature = pick(['hot', 2.01, -0.1, [], {}])),
    (b) => (b.top_p = pick([1.5, -1, 'max'])),
    (b) => (b.stream = pick(['yes', 1, 0, [], {}])),
    (b) => (b.stream_options = pick(['on', 1, { include_usage: 'yes' }])),
    (b) => (b.stop = pick([5, ['a', 'b', 'c', 'd', 'e'], [1], { s: 1 }])),
    (b) => (b.tools = pick(['all', [{ type: 'function', function: { name: weird(3) } }], [{ type: 'x' }], [{}]])),
    (b) => (b.tool_choice = pick(['sometimes', 3, { type: 'function' }])),
    (b) => (b.response_format = pick([{ type: 'yaml' }, 'json', { type: 'json_schema', json_schema: 'x' }])),
    (b) => (b.models = pick(['m', [''], Array.from({ length: 9 }, () => 'sandbox/echo'), [3]])),
    (b) => (b.timeout_ms = pick([0, 600_001, 'soon', 1.5])),
    (b) => (b.seed = pick([1.5, 'seed'])),
    (b) => (b.top_logprobs = pick([21, -1])),
    (b) => (b.user = pick([5, [], {}])),
    (b) => (b.model = pick(['no-such-model', weird(12), 'x'.repeat(100_000), `sandbox/echo${weird(2)}`])),
  ];

  const kinds: Array<[number, () => RawRequest]> = [
    [
      14,
      () => {
        const text = JSON.stringify(valid());
        const cut = int(text.length - 1);
        const broken = pick([
          text.slice(0, cut),
          text.slice(0, cut) + pick(['}', ']]', ',', '"', '\\']),
          text.replace(':', ''),
          `${text},`,
          `{"model": NaN}`,
          `{'model': 'x'}`,
          '{"a":1}{"b":2}',
          '[',
          'null',
          '"just a string"',
          '12',
          'true',
          '',
        ]);
        return { ...json(broken), kind: 'broken-json' };
      },
    ],
    [
      30,
      () => {
        const body = valid() as Record<string, unknown>;
        const count = 1 + int(3);
        for (let i = 0; i < count; i++) pick(wrongTypes)(body);
        return { ...json(JSON.stringify(body)), kind: 'wrong-types' };
      },
    ],
    [
      8,
      () => {
        const body = valid() as Record<string, unknown>;
        const huge = pick(['model', 'role', 'unknown-role-content']);
        const size = 200_000 + int(800_000);
        if (huge === 'model') body.model = 'm'.repeat(size);
        else if (huge === 'role') body.messages = [{ role: 'r'.repeat(size), content: 'x' }];
        else body.messages = [{ role: 'user', content: 'x'.repeat(size) }, 'not a message'];
        return { ...json(JSON.stringify(body)), kind: 'huge-strings' };
      },
    ],
    [
      8,
      () => {
        const depth = pick([100, 1_000, 10_000, 100_000]);
        const open = pick(['[', '{"a":']);
        const close = open === '[' ? ']' : '}';
        const nested = open.repeat(depth) + '1' + close.repeat(depth);
        const body = pick([
          `{"model":"sandbox/echo","messages":${nested}}`,
          `{"model":${nested},"messages":[]}`,
          nested,
        ]);
        return { ...json(body), kind: 'deep-nesting' };
      },
    ],
    [
      12,
      () => {
        // Lone surrogates as JSON escapes, raw invalid UTF-8, NUL, RTL marks: in fields that make the request invalid.
        const escape = pick(['\\ud800', '\\udc00', '\\ud83d\\u0041', '\\u0000', '\\u202e']);
        const variants = [
          () => Buffer.from(`{"model":"sandbox/echo${escape}","messages":[{"role":"user","content":"${escape}"}]}`),
          () => Buffer.from(`{"model":"sandbox/echo","messages":[{"role":"us${escape}er","content":"hi"}]}`),
          () =>
            Buffer.concat([
              Buffer.from('{"model":"'),
              pick(JUNK_BYTES),
              Buffer.from('","messages":[{"role":"user","content":"hi"}]}'),
            ]),
          () =>
            Buffer.concat([
              Buffer.from('{"model":"sandbox/echo","messages":[{"role":"user","content":"'),
              pick(JUNK_BYTES),
              Buffer.from('"}],"n":0}'),
            ]),
          () => Buffer.from(JSON.stringify({ model: weird(20), messages: [{ role: 'user', content: weird(50) }] })),
          () =>
            Buffer.from(`{"model":"sandbox/echo","messages":[{"role":"user","content":"a\u0000b"}],"max_tokens":0}`),
        ];
        return { ...json(pick(variants)()), kind: 'unicode' };
      },
    ],
    [
      14,
      () => {
        const body = JSON.stringify(valid());
        const bad: Array<Array<[string, string]>> = [
          [],
          [['authorization', 'Bearer']],
          [['authorization', 'Bearer ']],
          [['authorization', `Basic ${Buffer.from('user:pass').toString('base64')}`]],
          [['authorization', `Bearer ${keys.live.slice(0, -1)}`]],
          [['authorization', `Bearer ${keys.live}x`]],
          [['authorization', `Bearer ${keys.live.replace('live', 'test').slice(0, -2)}zz`]],
          [['authorization', `Bearer ${keys.revoked}`]],
          [['authorization', `Bearer ${keys.readOnly}`]],
          [['authorization', `Bearer ${keys.live} ${keys.live}`]],
          [['authorization', `Bearer tg-live-${'A'.repeat(31)}\u00e9`]],
          [['authorization', 'Bearer '.repeat(2000)]],
          [['authorization', `Bearer ${'\u00ff'.repeat(40)}`]],
          // Node keeps the first of duplicate Authorization headers.
          [
            ['authorization', 'Bearer other'],
            ['authorization', `Bearer ${keys.live}`],
          ],
        ];
        return { ...json(body, pick(bad)), kind: 'bad-auth' };
      },
    ],
    [
      8,
      () => {
        const type = pick([
          'text/plain',
          'application/x-www-form-urlencoded',
          'multipart/form-data; boundary=x',
          'application/xml',
          'application/jsonx',
          'json',
          '',
        ]);
        const body = JSON.stringify(valid());
        const request = { ...json(body), kind: 'content-type' };
        request.headers = [...auth(), ...(type ? [['content-type', type] as [string, string]] : [])];
        return request;
      },
    ],
    [
      6,
      () => {
        const routes: Array<[string, string, string | undefined]> = [
          ['GET', '/v1/models?capability=teleport', undefined],
          ['GET', '/v1/models?include_capabilities=maybe', undefined],
          ['GET', '/v1/credits', undefined],
          ['POST', '/v1/webhooks', '{"url": 5}'],
          ['POST', '/v1/webhooks', '{"url":"http://[::1'],
          ['PATCH', '/v1/webhooks/whk_nope', '{"enabled":"x"}'],
          ['GET', '/v1/chat/completions', undefined],
          ['DELETE', '/v1/models', undefined],
          ['GET', '/v1/%E0%A4%A', undefined],
          [
            'GET',
            `/v1/${[...Buffer.from(weird(4))].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('')}`,
            undefined,
          ],
          ['POST', '/admin/accounts', '{"email":"x@y.z"}'],
          ['GET', '/metrics', undefined],
          ['POST', '/dashboard/api/signin', '{"email":5}'],
          ['POST', '/dashboard/api/keys', '{}'],
        ];
        const [method, path, body] = pick(routes);
        const withKey = !path.startsWith('/v1/credits') && !path.startsWith('/admin') && !path.startsWith('/metrics');
        const headers: Array<[string, string]> = withKey ? auth() : [['authorization', `Bearer ${keys.readOnly}`]];
        if (path.startsWith('/v1/credits')) headers.splice(0, 1, ['authorization', 'Bearer nope']);
        return {
          kind: 'other-routes',
          method,
          path,
          headers: [...headers, ...(body ? [['content-type', 'application/json'] as [string, string]] : [])],
          ...(body ? { body: Buffer.from(body) } : {}),
        };
      },
    ],
  ];
  const total = kinds.reduce((sum, [weight]) => sum + weight, 0);

  return {
    next(): RawRequest {
      let roll = int(total);
      for (const [weight, make] of kinds) {
        if (roll < weight) return make();
        roll -= weight;
      }
      throw new Error('unreachable');
    },
    oversized(): RawRequest {
      return { ...json(Buffer.alloc(bodyLimit + 1 + int(1024), 0x20)), kind: 'oversized' };
    },
    slow(): RawRequest {
      const body = Buffer.from(JSON.stringify(valid()));
      return { ...json(body.subarray(0, 10)), declaredLength: body.length, stall: true, kind: 'slow-body' };
    },
  };
}
