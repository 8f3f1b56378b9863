/**
 * The inputs of the application and tenant methods, each derived from the schema that validates it
 * (`v.InferInput`), so a misspelled field or a wrong type fails to compile. The schemas still check
 * every input at run time: JavaScript callers and HTTP requests may send anything.
 */
import type * as v from 'valibot'
import type {
  createApplicationInput,
  createTenantInput,
  listInput,
  listPermissionsInput,
  updateApplicationInput,
} from './schemas.js'

/** Body of `applications.create`. */
export type CreateApplicationInput = v.InferInput<typeof createApplicationInput>
/** Body of `applications.update`: replaces name, permissions and rules. */
export type UpdateApplicationInput = v.InferInput<typeof updateApplicationInput>
/** Query of `applications.list`: filter `id` (one or several), and `page`, `size`. */
export type ListApplicationsQuery = v.InferInput<typeof listInput>
/** Query of `permissions.list`: `application_type` filters. */
export type ListPermissionsQuery = v.InferInput<typeof listPermissionsInput>
/** Input of `admin.createTenant`. */
export type CreateTenantInput = v.InferInput<typeof createTenantInput>
/**
 * Input of `admin.createApplication`: an application create body, the tenant, and optionally the
 * key itself (`key_` and 24 or more of A-Z a-z 0-9 _ -).
 */
export type AdminCreateApplicationInput = CreateApplicationInput & { tenantId: string; key?: string }
