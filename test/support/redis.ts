/** The real Redis of the tests: a short-lived client, and the commands clients send, as MONITOR sees them. */
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

/**
 * Runs `body` and returns the commands clients sent meanwhile (not those a script ran) that name a key under
 * `prefix`, each as its argument list. A marker command sent after `body` tells when MONITOR has shown them all.
 */
export async function commandsDuring<T>(prefix: string, body: () => Promise<T>, url = REDIS_TEST_URL): Promise<[T, string[][]]> {
  const client = new Redis(url);
  const monitor = await client.monitor();
  const marker = `${prefix}monitor-end`;
  const commands: string[][] = [];
  const ended = new Promise<void>((resolve) =>
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (args.includes(marker)) resolve();
      else if (source !== 'lua' && args.some((arg) => arg.startsWith(prefix))) commands.push(args);
    }),
  );
  try {
    const result = await body();
    await client.exists(marker);
    await ended;
    return [result, commands];
  } finally {
    monitor.disconnect();
    await client.quit();
  }
}
