/** What every storage-backed command needs: the server's configuration, its database and the admin service. */
import { AdminService, keySecret } from '../admin/index.js';
import { planLimits, type PlanLimits } from '../billing/index.js';
import type { RedisChangeBus } from '../cluster/index.js';
import { loadConfig, type Config } from '../config/index.js';
import { openStorage, type AccountSettings, type Storage } from '../storage/index.js';

export interface CliContext {
  config: Config;
  storage: Storage;
  admin: AdminService;
  limitsFor(account: { plan: string; settings: AccountSettings }): PlanLimits;
}

/** Opens config, storage (applying migrations) and the admin service, runs `fn`, and always closes storage. */
export async function withContext<T>(fn: (context: CliContext) => Promise<T>): Promise<T> {
  const config = loadConfig();
  const storage = await openStorage({ dataDir: config.storage.data_dir, databaseUrl: config.storage.database_url });
  // With Redis, running replicas hear of revocations and account changes at once (else within their 1 s refresh).
  const bus = config.redis_url ? await changeBus(config.redis_url, config.redis_prefix) : undefined;
  try {
    const admin = new AdminService(
      storage,
      config,
      await keySecret(storage, config),
      bus ? { onChange: (change) => bus.publish(change) } : {},
    );
    return await fn({ config, storage, admin, limitsFor: planLimits(config) });
  } finally {
    await bus?.close();
    await storage.close();
  }
}

async function changeBus(url: string, prefix: string): Promise<RedisChangeBus> {
  const { RedisChangeBus } = await import('../cluster/index.js');
  return new RedisChangeBus({ url, prefix });
}
