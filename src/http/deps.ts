import type { AdminService } from '../admin/index.js';
import type { PaymentProcessors } from '../billing/index.js';
import type { Config } from '../config/index.js';
import type { GatewayDeps } from '../gateway/index.js';
import type { Payments } from '../payments/index.js';
import type { Storage } from '../storage/index.js';
import type { WebhookService } from '../webhooks/index.js';

/** Everything the routes need, built once by the app. */
export interface HttpDeps extends GatewayDeps {
  config: Config;
  storage: Storage;
  admin: AdminService;
  /** The payment processors auto-recharge can charge through (shown to users: whether they may enable it). */
  processors: PaymentProcessors;
  isAdminToken: (presented: string | undefined) => boolean;
  /** Credit purchases (Stripe Checkout) and Stripe's webhook events. */
  payments: Payments;
  /** The `/v1/webhooks` API; absent, those routes are not registered. */
  webhooks?: WebhookService;
}

export function bearerToken(header: string | undefined): string | undefined {
  const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  return match?.[1];
}
