export { adminTokenChecker, bootstrap, keySecret, type FirstStart } from './bootstrap.js';
export { normalizeEmail } from './email.js';
export {
  AdminService,
  type AccountPatch,
  type AdminHooks,
  type CreatedKey,
  type NewKeyRequest,
  type OwnSettingsPatch,
} from './service.js';
export {
  AddCreditsSchema,
  CreateAccountSchema,
  CreateKeySchema,
  PatchAccountSchema,
  RefundPurchaseSchema,
} from './schemas.js';
export { usd } from './usd.js';
