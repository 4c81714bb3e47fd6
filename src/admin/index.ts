export { adminTokenChecker, bootstrap, keySecret, type FirstStart } from './bootstrap.js';
export { normalizeEmail } from './email.js';
export {
  AdminService,
  type AccountPatch,
  type AdminHooks,
  type CreatedKey,
  type KeyPatch,
  type NewKeyRequest,
  type OwnSettingsPatch,
} from './service.js';
export {
  AddCreditsSchema,
  CreateAccountSchema,
  CreateKeySchema,
  PatchAccountSchema,
  PatchKeySchema,
  RefundPurchaseSchema,
} from './schemas.js';
export { operator, type KeyAuthor } from './key-audit.js';
export { usd } from './usd.js';
