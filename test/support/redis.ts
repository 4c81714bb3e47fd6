/**
 * The real Redis of the tests: a short-lived client, deleting a test's keys, and the commands clients send, as
 * MONITOR sees them.
 */
import { connect } from 'node:net';
import { Redis } from 'ioredis';

export const REDIS_TEST_URL = process.env.TOLLGATE_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

export async function withRedis<T>(use: (redis: Redis) => Promise<T>, url = REDIS_TEST_URL): Promise<T> {
  const redis = new Redis(url);
  try {
    return await use(redis);
  } finally {
    await redis.quit();
  }
}

/** Deletes every key under `prefix` (SCAN MATCH prefix* + DEL) and returns how many there were. */
export async function deleteRedisKeys(prefix: string, url = REDIS_TEST_URL): Promise<number> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  redis.on('error', () => undefined);
  let deleted = 0;
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${escapeGlob(prefix)}*`, 'COUNT', 500);
      cursor = next;
      if (keys.length) deleted += await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return deleted;
}

function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}

/**
 * Runs `body` and returns the commands clients sent meanwhile (not those a script ran) that name a key under
 * `prefix`, each as its argument list. A marker command sent after `body` tells when MONITOR has shown them all.
 *
 * MONITOR is read from a plain socket: ioredis enters its monitoring mode one microtask after MONITOR's OK, so a
 * command line that arrives in the same read as the OK was taken for a reply ("Command queue state error").
 */
export async function commandsDuring<T>(
  prefix: string,
  body: () => Promise<T>,
  url = REDIS_TEST_URL,
): Promise<[T, string[][]]> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port || 6379), hostname);
  const marker = `${prefix}monitor-end`;
  const commands: string[][] = [];
  let started!: () => void;
  let ended!: () => void;
  const monitoring = new Promise<void>((resolve) => (started = resolve));
  const done = new Promise<void>((resolve) => (ended = resolve));
  let pending = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    pending += chunk;
    let end: number;
    while ((end = pending.indexOf('\r\n')) >= 0) {
      const line = pending.slice(0, end);
      pending = pending.slice(end + 2);
      if (line === '+OK') started();
      else if (line.startsWith('+')) {
        const source = line.slice(line.indexOf('[') + 1, line.indexOf(']')).split(' ')[1];
        const args = [...line.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]!.replace(/\\(.)/g, '$1'));
        if (args.includes(marker)) ended();
        else if (source !== 'lua' && args.some((arg) => arg.startsWith(prefix))) commands.push(args);
      }
    }
  });
  const failed = new Promise<never>((_, reject) => socket.on('error', reject));
  socket.write('MONITOR\r\n');
  await Promise.race([monitoring, failed]);
  const client = new Redis(url);
  try {
    const result = await body();
    await client.exists(marker);
    await Promise.race([done, failed]);
    return [result, commands];
  } finally {
    socket.destroy();
    await client.quit();
  }
}
