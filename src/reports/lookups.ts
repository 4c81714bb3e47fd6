/** The reads behind the API's, the dashboard's and the CLI's reports: one request explained, an account's export. */
import { utcDay } from '../billing/index.js';
import { GatewayError, invalidRequest } from '../errors/index.js';
import type { Storage, UsageTotals } from '../storage/index.js';
import { renderGeneration } from './generation.js';
import { usageExport } from './usage-export.js';
import type { UsageQuery } from './usage-query.js';

export type ReportStores = Pick<Storage, 'charges' | 'keys'>;

/** A key's requests, tokens and credits today and this month (UTC), live and test keys alike. */
export async function keyUsageOf(
  usage: Storage['usage'],
  keyId: string,
  now = Date.now(),
): Promise<{ daily: UsageTotals; monthly: UsageTotals }> {
  const today = utcDay(now);
  const [daily, monthly] = await Promise.all([
    usage.keyTotals(keyId, today, today),
    usage.keyTotals(keyId, `${today.slice(0, 7)}-01`, today),
  ]);
  return { daily, monthly };
}

/** Whose requests: an account's (named as its owner should read it), or only one key's of it (a project key's). */
export interface ReportScope {
  accountId: string;
  /** How the account is named in a 404 ("this account", or its id on the CLI). */
  accountName?: string;
  keyId?: string | undefined;
}

/** One request of the scope explained, found by any of its ids; 400 without an id, 404 naming it if not found. */
export async function explainCharge(stores: ReportStores, scope: ReportScope, id: string | undefined) {
  if (!id) throw invalidRequest("'id' is required: the answer's id, its x-request-id, or its ledger entry id", 'id');
  const record = await stores.charges.find(scope.accountId, id);
  if (!record || (scope.keyId !== undefined && record.keyId !== scope.keyId))
    throw new GatewayError('not_found', {
      message: `No request '${id}' was charged to ${scope.accountName ?? 'this account'}: give the answer's id, its x-request-id or its ledger entry id`,
      param: 'id',
    });
  const key = record.keyId === null ? undefined : await stores.keys.get(record.keyId);
  return renderGeneration(record, key?.name ?? null);
}

/** The scope's usage export for the query, with its keys' names. */
export async function exportUsage(
  stores: ReportStores,
  scope: ReportScope,
  query: UsageQuery,
): Promise<AsyncGenerator<string, void, undefined>> {
  const keys = await stores.keys.listByAccount(scope.accountId);
  const source = { charges: stores.charges, keyNames: new Map(keys.map((k) => [k.id, k.name])) };
  const range = { accountId: scope.accountId, fromMs: query.fromMs, toMs: query.toMs, keyId: scope.keyId };
  return usageExport(source, range, query);
}
