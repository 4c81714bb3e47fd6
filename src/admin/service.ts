/**
 * Operator actions on accounts, keys and credits. The admin HTTP API, the CLI and the first-start bootstrap
 * all go through here, so each rule (sign-up grant, key format, corrections never below zero) lives once.
 */
import { PERMISSION_CHOICES, generateKey, hashKey, isPermission, keyHint } from '../auth/index.js';
import {
  hasSavedPaymentMethod,
  parseUsd,
  paymentProcessors,
  planLimits,
  rechargeLimits,
  selfServeProcessor,
  usdString,
  type Nano,
  type PaymentProcessors,
} from '../billing/index.js';
import type { Config } from '../config/index.js';
import { GatewayError, invalidRequest } from '../errors/index.js';
import { normalizeEmail } from './email.js';
import {
  encodeSettings,
  newId,
  type AccountRecord,
  type AccountSettings,
  type KeyRecord,
  type Storage,
  type Actor,
  type AuditEntry,
} from '../storage/index.js';
import { applyAutoRecharge, applyBilling, checkOwnAutoRecharge } from './recharge-settings.js';
import type { AccountPatch, KeyPatch, NewKeyRequest } from './schemas.js';
import { accountChanges, keyAuditView, operator, type KeyAuthor } from './key-audit.js';
import { keyChangesOf } from './key-fields.js';
import { MAX_BALANCE_NANO, usd } from './usd.js';
import { closeAccount, type ClosedAccount } from './account-closing.js';

export type { AccountPatch, KeyPatch, NewKeyRequest };

/** What an account's own user may change (dashboard). */
export type OwnSettingsPatch = Pick<AccountPatch, 'auto_recharge' | 'low_balance_thresholds'>;

export interface CreatedKey {
  record: KeyRecord;
  /** The full key: shown once, never stored. */
  key: string;
}

export interface AdminHooks {
  /** A key was revoked or an account changed through this process: drop cached copies now. */
  onChange?(change: { accountId?: string; keyId?: string }): void | Promise<void>;
}

export class AdminService {
  private readonly limitsFor: ReturnType<typeof planLimits>;

  constructor(
    private readonly storage: Storage,
    private readonly config: Config,
    private readonly keySecret: string,
    private readonly hooks: AdminHooks = {},
    private readonly processors: PaymentProcessors = paymentProcessors(),
  ) {
    this.limitsFor = planLimits(config);
  }

  async createAccount(request: { email: string; plan?: string }): Promise<{ account: AccountRecord; key: CreatedKey }> {
    const account = await this.openAccount(request, { grant: true });
    return { account, key: await this.createKey(account.id, { name: 'default' }) };
  }

  /** A new account without keys; with `grant`, credited the sign-up grant in the same transaction. */
  async openAccount(request: { email: string; plan?: string }, options: { grant: boolean }): Promise<AccountRecord> {
    const email = normalizeEmail(request.email);
    const plan = request.plan ?? this.config.default_plan;
    this.requirePlan(plan);
    const taken = () => invalidRequest(`an account with email ${email} exists`, 'email');
    if (await this.storage.accounts.getByEmail(email)) throw taken();
    const id = newId('acct');
    const settings: AccountSettings = { autoRecharge: { enabled: false, thresholdNano: 0n, amountNano: 0n } };
    const grantNano = options.grant ? parseUsd(this.config.credits.signup_grant) : 0n;
    try {
      await this.storage.ledger.createAccount({
        id,
        email,
        plan,
        settings: encodeSettings(settings),
        grantNano,
        audit: [grantAudit(id, grantNano)],
      });
    } catch (error) {
      // The same email created at the same moment elsewhere: the unique index refused this one.
      if (await this.storage.accounts.getByEmail(email)) throw taken();
      throw error;
    }
    // The operator's grant counts for its mailbox: self-serve sign-ups of the same mailbox get none.
    if (grantNano > 0n) await this.storage.users.claimSignupGrant(id, email, Date.now());
    return (await this.storage.accounts.get(id))!;
  }

  /** The sign-up grant of an account opened without it (a self-serve account whose email was just verified). */
  async grantSignupCredit(accountId: string): Promise<void> {
    const amountNano = parseUsd(this.config.credits.signup_grant);
    if (amountNano === 0n) return;
    await this.storage.ledger.commit({
      entries: [{ accountId, kind: 'grant', amountNano, note: SIGNUP_NOTE }],
      audit: [grantAudit(accountId, amountNano)],
    });
    await this.hooks.onChange?.({ accountId });
  }

  /**
   * A new key with its governance; `author` says who makes it (the audit entry's actor, the key's owner) and which
   * permissions it may give. The key and its audit entry are written in one transaction.
   */
  async createKey(accountId: string, request: NewKeyRequest, author: KeyAuthor = operator()): Promise<CreatedKey> {
    const account = await this.requireAccount(accountId);
    if (account.closedAt !== null) throw closed(accountId);
    const environment = request.environment ?? 'live';
    if (environment !== 'live' && environment !== 'test')
      throw invalidRequest('environment must be live or test', 'environment');
    const permissions = request.permissions ?? 'full';
    if (!isPermission(permissions)) throw invalidRequest(`permissions must be ${PERMISSION_CHOICES}`, 'permissions');
    if (author.grantable && !author.grantable.includes(permissions))
      throw new GatewayError('permission_denied', {
        message: `You may not make a ${permissions} key (you may make: ${author.grantable.join(', ') || 'none'})`,
        param: 'permissions',
      });
    const models = request.models ?? [];
    if (!Array.isArray(models) || models.some((m) => typeof m !== 'string'))
      throw invalidRequest('models must be a list of model ids', 'models');
    if (models.length && permissions !== 'project')
      throw invalidRequest('models applies to project keys only', 'models');
    const unknownModel = models.find(
      (name) => !this.config.models.some((m) => m.id === name || (m.aliases ?? []).includes(name)),
    );
    if (unknownModel !== undefined) throw invalidRequest(`models: no model '${unknownModel}' in the catalog`, 'models');
    const now = Date.now();
    const changes = keyChangesOf(request, { accountLimits: this.limitsFor(account), now, creating: true });
    const key = generateKey(this.config.key_prefix, environment);
    const record = await this.storage.atomically(async (tx) => {
      if (await tx.accounts.isClosed(accountId, this.storage.dialect === 'postgres')) throw closed(accountId);
      const inserted = await tx.keys.insert({
        id: newId('key'),
        accountId,
        name: changes.name ?? `${environment} key`,
        keyHash: hashKey(this.keySecret, key),
        hint: keyHint(key),
        environment,
        permissions,
        models,
        spendLimitNano: changes.spendLimitNano ?? null,
        createdAt: now,
        limitReset: changes.limitReset ?? null,
        expiresAt: changes.expiresAt ?? null,
        requestsPerMinute: changes.requestsPerMinute ?? null,
        tokensPerMinute: changes.tokensPerMinute ?? null,
        allowedIps: changes.allowedIps ?? [],
        ownerUserId: author.ownerUserId,
      });
      await tx.audit.record({
        accountId,
        actor: author.actor,
        action: 'key.create',
        target: { type: 'key', id: inserted.id },
        before: null,
        after: keyAuditView(inserted),
        at: now,
      });
      return inserted;
    });
    return { record, key };
  }

  /** Changes a key's name and governance (PATCH); its audit entry, before and after, in the same transaction. */
  async updateKey(keyId: string, patch: KeyPatch, author: KeyAuthor = operator()): Promise<KeyRecord> {
    const current = await this.requireKey(keyId);
    if (current.revokedAt !== null) throw invalidRequest(`Key ${keyId} is revoked: it cannot be changed`, 'id');
    const account = await this.requireAccount(current.accountId);
    const now = Date.now();
    const changes = keyChangesOf(patch, { accountLimits: this.limitsFor(account), now, creating: false });
    const updated = await this.storage.atomically(async (tx) => {
      const before = (await tx.keys.get(keyId))!;
      const after = (await tx.keys.update(keyId, changes))!;
      await tx.audit.record({
        accountId: after.accountId,
        actor: author.actor,
        action: 'key.update',
        target: { type: 'key', id: keyId },
        before: keyAuditView(before),
        after: keyAuditView(after),
        at: now,
      });
      return after;
    });
    await this.hooks.onChange?.({ keyId, accountId: updated.accountId });
    return updated;
  }

  /** The owner closes the account (see account-closing.ts); every replica drops its keys and cached account. */
  async closeAccount(accountId: string, actor: Actor): Promise<ClosedAccount> {
    const closing = await closeAccount(this.storage, accountId, actor);
    await this.hooks.onChange?.({ accountId });
    await this.keysRevoked(accountId, closing.revokedKeyIds);
    return closing;
  }

  /** Keys revoked in another change (a removed member's, in the removal's transaction): drop cached copies. */
  async keysRevoked(accountId: string, keyIds: string[]): Promise<void> {
    for (const keyId of keyIds) await this.hooks.onChange?.({ keyId, accountId });
  }

  async revokeKey(keyId: string, author: KeyAuthor = operator()): Promise<KeyRecord> {
    const now = Date.now();
    const record = await this.storage.atomically(async (tx) => {
      const before = await tx.keys.get(keyId);
      if (!before) return undefined;
      const after = (await tx.keys.revoke(keyId, now))!;
      // Revoking twice keeps the first time and records nothing new.
      if (before.revokedAt === null)
        await tx.audit.record({
          accountId: after.accountId,
          actor: author.actor,
          action: 'key.revoke',
          target: { type: 'key', id: keyId },
          before: keyAuditView(before),
          after: keyAuditView(after),
          at: now,
        });
      return after;
    });
    if (!record) throw new GatewayError('not_found', { message: `No key ${keyId}`, param: 'id' });
    await this.hooks.onChange?.({ keyId, accountId: record.accountId });
    return record;
  }

  /** The key, or a 404 `not_found` naming it. */
  async requireKey(keyId: string): Promise<KeyRecord> {
    const key = await this.storage.keys.get(keyId);
    if (!key) throw new GatewayError('not_found', { message: `No key ${keyId}`, param: 'id' });
    return key;
  }

  /** A top-up (positive) or a correction (negative, never taking the balance below zero). */
  /** `actor`: the operator over the admin API (with the client's address) or the CLI; recorded as `credits.add`. */
  async addCredits(
    accountId: string,
    amountUsd: number | string,
    note?: string,
    actor: Actor = operator().actor,
  ): Promise<{ appliedNano: Nano; balanceNano: Nano }> {
    const amount = usd(amountUsd, 'amount', true);
    if (amount === 0n) throw invalidRequest('amount must not be zero', 'amount');
    const current = await this.requireAccount(accountId);
    if (current.balanceNano + amount > MAX_BALANCE_NANO) {
      throw invalidRequest(
        `amount would take the balance over the maximum of ${usdString(MAX_BALANCE_NANO)} USD`,
        'amount',
      );
    }
    const kind = amount > 0n ? 'topup' : 'correction';
    const result = await this.storage.ledger.commit({
      entries: [{ accountId, kind, amountNano: amount, ...(note ? { note } : {}) }],
      audit: [
        {
          accountId,
          actor,
          action: 'credits.add',
          target: { type: 'account', id: accountId },
          after: { kind, amount: usdString(amount), ...(note ? { note } : {}) },
        },
      ],
    });
    await this.hooks.onChange?.({ accountId });
    return { appliedNano: result.applied[0]!, balanceNano: result.balances.get(accountId)!.balanceNano };
  }

  async getAccount(accountId: string): Promise<{ account: AccountRecord; keys: KeyRecord[] }> {
    const account = await this.requireAccount(accountId);
    return { account, keys: await this.storage.keys.listByAccount(accountId) };
  }

  /** `selfServe`: the account's own user, with a saved payment method, turns auto-recharge on (charged by that processor). */
  async updateAccount(
    accountId: string,
    patch: AccountPatch,
    selfServe?: string,
    author: KeyAuthor = operator(),
    action = 'account.update',
  ): Promise<AccountRecord> {
    const account = await this.requireAccount(accountId);
    if (patch.plan !== undefined) this.requirePlan(patch.plan);
    const settings: AccountSettings = { ...account.settings, autoRecharge: { ...account.settings.autoRecharge } };
    if (patch.requests_per_minute !== undefined)
      setOverride(settings, 'requestsPerMinute', positiveInt(patch.requests_per_minute, 'requests_per_minute'));
    if (patch.tokens_per_minute !== undefined)
      setOverride(settings, 'tokensPerMinute', positiveInt(patch.tokens_per_minute, 'tokens_per_minute'));
    if (patch.daily_limit !== undefined) {
      if (patch.daily_limit === null) delete settings.dailyLimitNano;
      else settings.dailyLimitNano = patch.daily_limit === 'none' ? null : usd(patch.daily_limit, 'daily_limit');
    }
    if (patch.billing !== undefined) applyBilling(settings, patch.billing, this.processors);
    if (selfServe && !settings.billing) settings.billing = { processor: selfServe, monthlyCeilingNano: null };
    if (patch.auto_recharge) applyAutoRecharge(settings, patch.auto_recharge, rechargeLimits(this.config));
    if (patch.low_balance_thresholds !== undefined) {
      if (patch.low_balance_thresholds === null) delete settings.lowBalanceThresholdsNano;
      else if (!Array.isArray(patch.low_balance_thresholds))
        throw invalidRequest('low_balance_thresholds must be a list of USD amounts', 'low_balance_thresholds');
      else
        settings.lowBalanceThresholdsNano = patch.low_balance_thresholds.map((t) => usd(t, 'low_balance_thresholds'));
    }
    const updated = await this.storage.atomically(async (tx) => {
      const after = (await tx.accounts.update(accountId, {
        ...(patch.plan !== undefined ? { plan: patch.plan } : {}),
        settings,
      }))!;
      const { before, after: changed } = accountChanges(account, after);
      await tx.audit.record({
        accountId,
        actor: author.actor,
        action,
        target: { type: 'account', id: accountId },
        before,
        after: changed,
      });
      return after;
    });
    await this.hooks.onChange?.({ accountId });
    return updated;
  }

  /** The account's own user's change: the operator's rules, and auto-recharge only where they may turn it on. */
  async updateOwnSettings(accountId: string, patch: OwnSettingsPatch, author: KeyAuthor): Promise<AccountRecord> {
    const account = await this.requireAccount(accountId);
    const saved = await hasSavedPaymentMethod(this.storage, accountId);
    checkOwnAutoRecharge(account.settings, patch.auto_recharge, this.processors, saved);
    const { auto_recharge, low_balance_thresholds } = patch;
    const selfServe = auto_recharge?.enabled === true && saved ? selfServeProcessor(this.processors)?.id : undefined;
    return this.updateAccount(
      accountId,
      {
        ...(auto_recharge ? { auto_recharge } : {}),
        ...(low_balance_thresholds !== undefined ? { low_balance_thresholds } : {}),
      },
      selfServe,
      author,
      'settings.update',
    );
  }

  async listAccounts(options: { limit?: number; after?: string } = {}): Promise<AccountRecord[]> {
    return this.storage.accounts.list({
      limit: Math.min(options.limit ?? 100, 1000),
      ...(options.after ? { after: options.after } : {}),
    });
  }

  /** The account, or a 404 `not_found` naming it. */
  async requireAccount(accountId: string): Promise<AccountRecord> {
    const account = await this.storage.accounts.get(accountId);
    if (!account) throw new GatewayError('not_found', { message: `No account ${accountId}`, param: 'id' });
    return account;
  }

  private requirePlan(plan: string): void {
    if (typeof plan !== 'string' || !this.config.plans[plan]) {
      throw invalidRequest(`plan must be one of: ${Object.keys(this.config.plans).join(', ')}`, 'plan');
    }
  }
}

function positiveInt(value: number | null, param: string): number | null {
  if (value === null) return null;
  if (!Number.isSafeInteger(value) || value < 1)
    throw invalidRequest(`${param} must be a positive whole number or null`, param);
  return value;
}

function setOverride(
  settings: AccountSettings,
  field: 'requestsPerMinute' | 'tokensPerMinute',
  value: number | null,
): void {
  if (value === null) delete settings[field];
  else settings[field] = value;
}

const closed = (accountId: string) =>
  invalidRequest(`Account ${accountId} is closed: it can have no new keys`, 'account_id');

const SIGNUP_NOTE = 'sign-up credit';

/** `credits.grant`: tollgate credits the sign-up grant by its own rule, whoever opened the account. */
function grantAudit(accountId: string, amountNano: bigint): AuditEntry {
  return {
    accountId,
    actor: { type: 'system', id: null },
    action: 'credits.grant',
    target: { type: 'account', id: accountId },
    after: { kind: 'grant', amount: usdString(amountNano), note: SIGNUP_NOTE },
  };
}
