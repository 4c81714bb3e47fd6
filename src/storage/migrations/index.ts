import type { Migration } from 'kysely';
import { initial } from './001_initial.js';
import { webhooks } from './002_webhooks.js';
import { dashboard } from './003_dashboard.js';
import { idempotency } from './004_idempotency.js';
import { emailVerification } from './005_email_verification.js';
import { webhookFairClaim } from './006_webhook_fair_claim.js';
import { creditPurchases } from './007_credit_purchases.js';
import { cardRecharges } from './008_card_recharges.js';
import { paymentReversals } from './009_payment_reversals.js';
import { responses } from './010_responses.js';
import { billing } from './011_billing.js';
import { pendingPurchases } from './012_pending_purchases.js';
import { signupGrantMailboxes } from './013_signup_grant_mailboxes.js';
import { paymentReversalsByPayment } from './014_payment_reversals_by_payment.js';
import { requestDetail } from './015_request_detail.js';
import { teams } from './016_teams.js';
import { peopleOnly } from './017_people_only.js';
import { accountClosing } from './018_account_closing.js';

/** Every migration by name, compiled in so `dist/` needs no migration folder at run time. */
export const MIGRATIONS: Record<string, Migration> = {
  '001_initial': initial,
  '002_webhooks': webhooks,
  '003_dashboard': dashboard,
  '004_idempotency': idempotency,
  '005_email_verification': emailVerification,
  '006_webhook_fair_claim': webhookFairClaim,
  '007_credit_purchases': creditPurchases,
  '008_card_recharges': cardRecharges,
  '009_payment_reversals': paymentReversals,
  '010_responses': responses,
  '011_billing': billing,
  '012_pending_purchases': pendingPurchases,
  '013_signup_grant_mailboxes': signupGrantMailboxes,
  '014_payment_reversals_by_payment': paymentReversalsByPayment,
  '015_request_detail': requestDetail,
  '016_teams': teams,
  '017_people_only': peopleOnly,
  '018_account_closing': accountClosing,
};
