/** Credit purchases through a payment processor, and each account's customer and saved payment method there. */
import type { Kysely, Selectable } from 'kysely';
import type { CreditPurchasesTable, Database, PurchaseStatus } from './schema.js';
import { big, numOrNull, num } from './values.js';

export type { PurchaseStatus };

export interface PurchaseRecord {
  id: string;
  accountId: string;
  amountNano: bigint;
  currency: string;
  status: PurchaseStatus;
  processor: string;
  checkoutSessionId: string | null;
  checkoutUrl: string | null;
  paymentIntentId: string | null;
  receiptUrl: string | null;
  createdAt: number;
  paidAt: number | null;
}

export interface NewPurchase {
  id: string;
  accountId: string;
  amountNano: bigint;
  currency: string;
  processor: string;
  createdAt: number;
}

export interface PaymentCustomer {
  processor: string;
  customerId: string;
  paymentMethodId: string | null;
}

export interface PaidPayment {
  kind: 'purchase' | 'recharge';
  id: string;
  accountId: string;
  amountNano: bigint;
}

export class PurchaseStore {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(purchase: NewPurchase): Promise<void> {
    await this.db
      .insertInto('credit_purchases')
      .values({
        id: purchase.id,
        account_id: purchase.accountId,
        amount_nano: purchase.amountNano,
        currency: purchase.currency,
        status: 'pending',
        processor: purchase.processor,
        created_at: purchase.createdAt,
      })
      .execute();
  }

  async attachCheckout(id: string, sessionId: string, url: string): Promise<void> {
    await this.db
      .updateTable('credit_purchases')
      .set({ checkout_session_id: sessionId, checkout_url: url })
      .where('id', '=', id)
      .execute();
  }

  /** Moves a pending purchase to `status` (expired, failed); a paid one stays paid. */
  async close(id: string, status: Exclude<PurchaseStatus, 'pending' | 'paid'>): Promise<void> {
    await this.db
      .updateTable('credit_purchases')
      .set({ status })
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .execute();
  }

  async setReceipt(id: string, receiptUrl: string): Promise<void> {
    await this.db.updateTable('credit_purchases').set({ receipt_url: receiptUrl }).where('id', '=', id).execute();
  }

  async get(id: string): Promise<PurchaseRecord | undefined> {
    const row = await this.db.selectFrom('credit_purchases').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toPurchase(row);
  }

  /** Newest first; `before` is the id of the last purchase of the previous page. */
  async list(accountId: string, page: { limit: number; before?: string }): Promise<PurchaseRecord[]> {
    let query = this.db
      .selectFrom('credit_purchases')
      .selectAll()
      .where('account_id', '=', accountId)
      .orderBy('id', 'desc')
      .limit(page.limit);
    if (page.before) query = query.where('id', '<', page.before);
    return (await query.execute()).map(toPurchase);
  }

  /**
   * Purchases still pending with a checkout session, created within [`after`, `before`], newest first: those whose
   * payment the gateway asks the processor about when its confirmation is late.
   */
  async pendingCheckouts(window: { after: number; before: number; limit: number }): Promise<PurchaseRecord[]> {
    const rows = await this.db
      .selectFrom('credit_purchases')
      .selectAll()
      .where('status', '=', 'pending')
      .where('created_at', '>=', BigInt(window.after))
      .where('created_at', '<=', BigInt(window.before))
      .where('checkout_session_id', 'is not', null)
      .orderBy('created_at', 'desc')
      .limit(window.limit)
      .execute();
    return rows.map(toPurchase);
  }

  /** The purchase or card recharge a processor's payment paid for, if any (refunds and disputes name the payment). */
  async paymentOf(paymentIntentId: string): Promise<PaidPayment | undefined> {
    const purchase = await this.db
      .selectFrom('credit_purchases')
      .select(['id', 'account_id', 'amount_nano'])
      .where('payment_intent_id', '=', paymentIntentId)
      .where('status', '=', 'paid')
      .executeTakeFirst();
    if (purchase)
      return {
        kind: 'purchase',
        id: purchase.id,
        accountId: purchase.account_id,
        amountNano: big(purchase.amount_nano),
      };
    const recharge = await this.db
      .selectFrom('card_recharges')
      .select(['id', 'account_id', 'amount_nano'])
      .where('payment_intent_id', '=', paymentIntentId)
      .where('status', '=', 'succeeded')
      .executeTakeFirst();
    return (
      recharge && {
        kind: 'recharge',
        id: recharge.id,
        accountId: recharge.account_id,
        amountNano: big(recharge.amount_nano),
      }
    );
  }

  /** What a payment's refunds and disputes ask back in all (the ledger takes back at most the payment). */
  async reversedOf(paymentReference: string): Promise<bigint> {
    const rows = await this.db
      .selectFrom('payment_reversals')
      .select('amount_nano')
      .where('payment_reference', '=', paymentReference)
      .execute();
    return rows.reduce((sum, row) => sum + big(row.amount_nano), 0n);
  }

  async customer(accountId: string): Promise<PaymentCustomer | undefined> {
    const row = await this.db
      .selectFrom('payment_customers')
      .selectAll()
      .where('account_id', '=', accountId)
      .executeTakeFirst();
    return row && { processor: row.processor, customerId: row.customer_id, paymentMethodId: row.payment_method_id };
  }

  /** Keeps the first customer saved for the account (a concurrent second one is not kept) and returns it. */
  async saveCustomer(accountId: string, processor: string, customerId: string): Promise<PaymentCustomer> {
    await this.db
      .insertInto('payment_customers')
      .values({ account_id: accountId, processor, customer_id: customerId, updated_at: Date.now() })
      .onConflict((oc) => oc.column('account_id').doNothing())
      .execute();
    return (await this.customer(accountId))!;
  }

  async savePaymentMethod(
    accountId: string,
    processor: string,
    customerId: string,
    paymentMethodId: string,
  ): Promise<void> {
    const updated_at = Date.now();
    await this.db
      .insertInto('payment_customers')
      .values({
        account_id: accountId,
        processor,
        customer_id: customerId,
        payment_method_id: paymentMethodId,
        updated_at,
      })
      .onConflict((oc) => oc.column('account_id').doUpdateSet({ payment_method_id: paymentMethodId, updated_at }))
      .execute();
  }
}

function toPurchase(row: Selectable<CreditPurchasesTable>): PurchaseRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    amountNano: big(row.amount_nano),
    currency: row.currency,
    status: row.status,
    processor: row.processor,
    checkoutSessionId: row.checkout_session_id,
    checkoutUrl: row.checkout_url,
    paymentIntentId: row.payment_intent_id,
    receiptUrl: row.receipt_url,
    createdAt: num(row.created_at),
    paidAt: numOrNull(row.paid_at),
  };
}
