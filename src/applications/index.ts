// The public face of this folder: what other folders of src/ import (they import nothing else
// from it). Kept by hand: add a name when another folder needs it.

export type { Principal } from './access.js'
export {
  applyTransform,
  requireGrantWithin,
  requirePermission,
  requireReveal,
  requireTokenAccess,
  requireType,
  ruleMatches,
  shownUnderRead,
  tokenAccess,
  withMaskedData,
  withoutData,
} from './access.js'
export type { ApplicationWithKey } from './applications.js'
export {
  applicationOperations,
  newApplication,
  requirePermissionsFitType,
  shownApplication,
} from './applications.js'
export { authenticate, hashApiKey } from './auth.js'
export type {
  AdminCreateApplicationInput,
  CreateApplicationInput,
  CreateTenantInput,
  ListApplicationsQuery,
  ListPermissionsQuery,
  UpdateApplicationInput,
} from './inputs.js'
export type { ApplicationKey } from './keys.js'
export { applicationKeyOperations, MAX_APPLICATION_KEYS } from './keys.js'
export {
  applicationRule,
  PERMISSIONS,
  PERMISSIONS_BY_TYPE,
  permission,
  permissionList,
  ruleList,
  sessionRule,
  sessionRuleList,
} from './permissions.js'
export {
  APPLICATION_TYPES,
  createApplicationInput,
  createTenantInput,
  listInput,
  listPermissionsInput,
  updateApplicationInput,
} from './schemas.js'
