/** Auto-recharges charged to a saved card: the row that keeps one in flight per account and is credited once. */
import type { Kysely, Selectable } from 'kysely';
import type { CardRechargesTable, Database, RechargeStatus } from './schema.js';
import { big, num, numOrNull } from './values.js';

export type { RechargeStatus };

export interface RechargeRecord {
  id: string;
  accountId: string;
  amountNano: bigint;
  status: RechargeStatus;
  processor: string;
  paymentIntentId: string | null;
  failure: string | null;
  createdAt: number;
  claimedAt: number;
  /** When it succeeded or failed; null while pending. */
  settledAt: number | null;
  /** The processor's receipt of a succeeded recharge, once known. */
  receiptUrl: string | null;
}

export class RechargeStore {
  constructor(private readonly db: Kysely<Database>) {}

  /**
   * Writes a pending recharge, unless the account has one pending already (this replica's or another's):
   * then nothing is written and the answer is that one.
   */
  async begin(recharge: {
    id: string;
    accountId: string;
    amountNano: bigint;
    processor: string;
    at: number;
  }): Promise<{ started: true } | { started: false; pending: RechargeRecord | undefined }> {
    const result = await this.db
      .insertInto('card_recharges')
      .values({
        id: recharge.id,
        account_id: recharge.accountId,
        amount_nano: recharge.amountNano,
        status: 'pending',
        processor: recharge.processor,
        created_at: recharge.at,
        claimed_at: recharge.at,
      })
      .onConflict((oc) => oc.doNothing())
      .executeTakeFirst();
    if (Number(result.numInsertedOrUpdatedRows ?? 0n) === 1) return { started: true };
    return { started: false, pending: await this.pendingOf(recharge.accountId) };
  }

  /** Takes over a pending recharge whose claim is older than `staleBefore` (its process died): true if this call won. */
  async reclaim(recharge: RechargeRecord, staleBefore: number, at: number): Promise<boolean> {
    if (recharge.claimedAt >= staleBefore) return false;
    const result = await this.db
      .updateTable('card_recharges')
      .set({ claimed_at: at })
      .where('id', '=', recharge.id)
      .where('status', '=', 'pending')
      .where('claimed_at', '=', BigInt(recharge.claimedAt))
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  async setPaymentIntent(id: string, paymentIntentId: string): Promise<void> {
    await this.db
      .updateTable('card_recharges')
      .set({ payment_intent_id: paymentIntentId })
      .where('id', '=', id)
      .execute();
  }

  /** Pending to failed; false if it was settled already. */
  async fail(id: string, failure: string, at: number): Promise<boolean> {
    const result = await this.db
      .updateTable('card_recharges')
      .set({ status: 'failed', failure, settled_at: at })
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .executeTakeFirst();
    return Number(result.numUpdatedRows) === 1;
  }

  /** A recharge that turned out not to be needed (the balance was back above the threshold): nothing was charged. */
  async drop(id: string): Promise<void> {
    await this.db
      .deleteFrom('card_recharges')
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .where('payment_intent_id', 'is', null)
      .execute();
  }

  async get(id: string): Promise<RechargeRecord | undefined> {
    const row = await this.db.selectFrom('card_recharges').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toRecharge(row);
  }

  async setReceipt(id: string, receiptUrl: string): Promise<void> {
    await this.db.updateTable('card_recharges').set({ receipt_url: receiptUrl }).where('id', '=', id).execute();
  }

  /** The account's recharges, newest first; `before` is the id of the last recharge of the previous page. */
  async list(accountId: string, page: { limit: number; before?: string }): Promise<RechargeRecord[]> {
    let query = this.db
      .selectFrom('card_recharges')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('id', 'desc')
      .limit(page.limit);
    if (page.before) query = query.where('id', '<', page.before);
    return (await query.execute()).map(toRecharge);
  }

  private async pendingOf(accountId: string): Promise<RechargeRecord | undefined> {
    const row = await this.db
      .selectFrom('card_recharges')
      .selectAll()
      .where('account_id', '=', accountId)
      .where('status', '=', 'pending')
      .executeTakeFirst();
    return row && toRecharge(row);
  }
}

function toRecharge(row: Selectable<CardRechargesTable>): RechargeRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    amountNano: big(row.amount_nano),
    status: row.status,
    processor: row.processor,
    paymentIntentId: row.payment_intent_id,
    failure: row.failure,
    createdAt: num(row.created_at),
    claimedAt: num(row.claimed_at),
    settledAt: numOrNull(row.settled_at),
    receiptUrl: row.receipt_url,
  };
}
