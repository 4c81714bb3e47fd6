/** The request body of `POST /v1/credits/purchases` (for the OpenAPI document; ./purchases.ts checks it field by field). */
import { Type, type Static } from '@sinclair/typebox';

export const CreatePurchaseSchema = Type.Object(
  {
    amount: Type.Number({
      description: 'USD in whole cents, within payments.purchase.min_amount and max_amount (default 5 to 1000)',
    }),
  },
  { additionalProperties: false },
);

export type CreatePurchaseBody = Static<typeof CreatePurchaseSchema>;
