/**
 * `Idempotency-Key` on chat requests (docs/api.md#idempotent-requests): a retry of a request that was answered
 * gets the first answer again, without running or charging anything. Keys are scoped to the account and kept
 * 24 hours. While the first request runs, a duplicate gets 409 (the openai SDKs retry 409 on their own); a key
 * reused with a different request gets 422. Only answers are kept: a request that failed frees its key.
 */
import { createHash, randomBytes } from 'node:crypto';
import { GatewayError, invalidRequest } from '../errors/index.js';
import { storedJson, type IdempotencyStore, type KeyRecord } from '../storage/index.js';
import { isDone, type ChatCompletion, type StreamEvent } from '../wire/index.js';
import type { Answer, RequestInput } from './request.js';

export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;
const KEY_SHAPE = /^[\x21-\x7e]{1,255}$/;
const PURGE_EVERY_MS = 60_000;

/** A kept answer; a stream's events as they were sent (as SSE text when kept before events were objects). */
type Stored<B> =
  | { kind: 'json'; headers: Record<string, string>; body: B }
  | { kind: 'stream'; headers: Record<string, string>; events: Array<StreamEvent | string> };

/** What idempotency must know of an endpoint: its name (none for chat) and the event that ends a complete stream. */
export interface StreamProtocol {
  endpoint: string | undefined;
  isLast: (event: StreamEvent) => boolean;
}

const CHAT_PROTOCOL: StreamProtocol = { endpoint: undefined, isLast: isDone };

/** An OpenAI endpoint other than chat: its streams end with `[DONE]` too. */
export function openAiProtocol(endpoint: string): StreamProtocol {
  return { endpoint, isLast: CHAT_PROTOCOL.isLast };
}

export interface IdempotencyOptions {
  store: IdempotencyStore;
  /** How long a pending claim holds its key when its request never finishes (the process died). */
  leaseMs: number;
  onError?: (error: unknown) => void;
  now?: () => number;
}

export class Idempotency {
  private lastPurge = 0;

  constructor(private readonly options: IdempotencyOptions) {}

  /**
   * Runs `answer` once per (account, key): the first request runs it and stores its answer; a retry gets that
   * answer back (header `idempotent-replayed: true`). Without a key, just runs it. `protocol` is needed for any
   * endpoint but chat: its name, so that a key reused on another endpoint never replays the wrong kind of answer,
   * and the event that ends a complete stream.
   */
  async run<B = ChatCompletion>(
    key: KeyRecord,
    { idempotencyKey, body, requestId }: Pick<RequestInput, 'idempotencyKey' | 'body' | 'requestId'>,
    answer: () => Promise<Answer<B>>,
    protocol: StreamProtocol = CHAT_PROTOCOL,
  ): Promise<Answer<B>> {
    if (idempotencyKey === undefined) return answer();
    if (!KEY_SHAPE.test(idempotencyKey)) {
      throw invalidRequest('Idempotency-Key must be 1 to 255 printable ASCII characters', 'Idempotency-Key');
    }
    const { store } = this.options;
    const now = this.now();
    this.purge(now);
    const fingerprint = fingerprintOf(key, body, protocol.endpoint);
    const claim = randomBytes(12).toString('base64url');
    const owned = await store.claim({
      accountId: key.accountId,
      key: idempotencyKey,
      fingerprint,
      claim,
      requestId,
      now,
      leaseUntil: now + this.options.leaseMs,
    });
    if (!owned) return this.existing<B>(key.accountId, idempotencyKey, fingerprint);

    const release = () =>
      store.release(key.accountId, idempotencyKey, claim).catch((error) => this.options.onError?.(error));
    const keep = (stored: Stored<B>) =>
      store
        .complete(key.accountId, idempotencyKey, claim, JSON.stringify(stored), this.now() + IDEMPOTENCY_TTL_MS)
        .catch((error) => {
          this.options.onError?.(error);
          return false;
        });
    let result: Answer<B>;
    try {
      result = await answer();
    } catch (error) {
      await release();
      throw error;
    }
    if (result.kind === 'json') {
      await keep({ kind: 'json', headers: result.headers, body: result.body });
      return result;
    }
    const { headers } = result;
    return {
      kind: 'stream',
      headers,
      events: recorded(result.events, protocol.isLast, (events) => keep({ kind: 'stream', headers, events }), release),
    };
  }

  private async existing<B>(accountId: string, idempotencyKey: string, fingerprint: string): Promise<Answer<B>> {
    const record = await this.options.store.get(accountId, idempotencyKey);
    // Released or expired between our claim and this read: the client may simply retry.
    if (!record || record.state === 'pending' || record.expiresAt <= this.now()) {
      if (record && record.fingerprint !== fingerprint)
        throw new GatewayError('idempotency_key_reused', { param: 'Idempotency-Key' });
      throw new GatewayError('idempotency_key_in_use', { param: 'Idempotency-Key', headers: { 'retry-after': '1' } });
    }
    if (record.fingerprint !== fingerprint)
      throw new GatewayError('idempotency_key_reused', { param: 'Idempotency-Key' });
    const stored = storedJson<Stored<B>>(record.response!);
    const headers = { ...stored.headers, 'idempotent-replayed': 'true' };
    if (stored.kind === 'json') return { kind: 'json', headers, body: stored.body };
    return { kind: 'stream', headers, events: replay(stored.events) };
  }

  private purge(now: number): void {
    if (now - this.lastPurge < PURGE_EVERY_MS) return;
    this.lastPurge = now;
    this.options.store.deleteExpired(now).catch((error) => this.options.onError?.(error));
  }

  private now(): number {
    return this.options.now?.() ?? Date.now();
  }
}

/** The request the key must match: the key's environment, the endpoint (other than chat) and the body, keys sorted. */
function fingerprintOf(key: KeyRecord, body: unknown, endpoint: string | undefined): string {
  const hash = createHash('sha256').update(key.environment).update('\n');
  if (endpoint) hash.update(endpoint).update('\n');
  return hash.update(canonical(body)).digest('hex');
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * Passes a stream's events through and keeps them; a stream that ends with its protocol's last event (`[DONE]`)
 * is stored before that event leaves. A stream that ends otherwise (the client went away, an error event) frees the key.
 */
async function* recorded(
  events: AsyncGenerator<StreamEvent, void, undefined>,
  isLast: (event: StreamEvent) => boolean,
  keep: (events: StreamEvent[]) => Promise<unknown>,
  release: () => Promise<unknown>,
): AsyncGenerator<StreamEvent, void, undefined> {
  const seen: StreamEvent[] = [];
  let complete = false;
  try {
    for await (const event of events) {
      if (isLast(event)) {
        seen.push(event);
        await keep(seen);
        complete = true;
      } else {
        seen.push(event);
      }
      yield event;
    }
  } finally {
    if (!complete) await release();
  }
}

// eslint-disable-next-line @typescript-eslint/require-await -- an answer's events are an async stream; kept ones wait for nothing
async function* replay(events: Array<StreamEvent | string>): AsyncGenerator<StreamEvent, void, undefined> {
  for (const event of events) yield typeof event === 'string' ? fromSseText(event) : event;
}

/** An event kept as SSE text (`event: x\ndata: {...}\n\n`) by an earlier version, within the key's 24 hours. */
function fromSseText(text: string): StreamEvent {
  const name = /^event: (.*)$/m.exec(text)?.[1];
  const data = /^data: (.*)$/m.exec(text)?.[1] ?? '';
  const parsed: unknown = data === '[DONE]' ? data : JSON.parse(data);
  return { event: name, data: typeof parsed === 'object' && parsed !== null ? parsed : '[DONE]' };
}
