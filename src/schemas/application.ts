import * as v from 'valibot'
import { permissionList, ruleList } from './access.js'
import { pagination } from './common.js'

const name = v.pipe(
  v.string('must be a string'),
  v.trim(),
  v.minLength(1, 'must not be empty'),
  v.maxLength(200, 'must be at most 200 characters'),
)

/** Body of application create (and of `admin.createApplication`, with `tenantId` beside it). */
export const createApplicationInput = v.strictObject({
  name,
  type: v.picklist(['private', 'public', 'management'], 'must be private, public or management'),
  permissions: v.optional(permissionList, []),
  rules: v.optional(ruleList),
})
export type CreateApplicationInput = v.InferInput<typeof createApplicationInput>

/** Body of application update: replaces name, permissions and rules; the type can't change. */
export const updateApplicationInput = v.strictObject({
  name,
  permissions: v.optional(permissionList, []),
  rules: v.optional(ruleList),
})
export type UpdateApplicationInput = v.InferInput<typeof updateApplicationInput>

/** Query of application list. */
export const listInput = v.strictObject({ ...pagination })
export type ListInput = v.InferInput<typeof listInput>

/** Input of `admin.createTenant`. */
export const createTenantInput = v.strictObject({ name })
