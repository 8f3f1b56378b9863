import * as v from 'valibot'
import type { ApplicationType } from '../kernel/index.js'
import { isoDateTime, pagination, stringList } from '../kernel/index.js'
import { permissionList, ruleList } from './permissions.js'

const name = v.pipe(
  v.string('must be a string'),
  v.trim(),
  v.minLength(1, 'must not be empty'),
  v.maxLength(200, 'must be at most 200 characters'),
)

/** The reference: "Either `permissions` or `rules` is required to be non-empty". */
const grantsSomething = (b: { permissions: unknown[]; rules?: unknown[] | undefined }) =>
  b.permissions.length > 0 || (b.rules?.length ?? 0) > 0
const GRANTS_MESSAGE = 'permissions or rules must be non-empty'

/** Body of application create (and of `admin.createApplication`, with `tenantId` beside it). */
export const createApplicationInput = v.pipe(
  v.strictObject({
    name,
    type: v.picklist(['private', 'public', 'management'], 'must be private, public or management'),
    permissions: v.optional(permissionList, []),
    rules: v.optional(ruleList),
    /** When the application is deleted (any format `isoDateTime` takes); must be in the future. */
    expires_at: v.optional(isoDateTime),
  }),
  v.forward(
    v.check((b) => grantsSomething(b), GRANTS_MESSAGE),
    ['permissions'],
  ),
)

/** Body of application update: replaces name, permissions and rules; the type can't change. */
export const updateApplicationInput = v.pipe(
  v.strictObject({
    name,
    permissions: v.optional(permissionList, []),
    rules: v.optional(ruleList),
  }),
  v.forward(
    v.check((b) => grantsSomething(b), GRANTS_MESSAGE),
    ['permissions'],
  ),
)

/** Query of application list: filter `id` (one or several), and paging. */
export const listInput = v.strictObject({ id: stringList(100), ...pagination })

/** Input of `admin.createTenant`. */
export const createTenantInput = v.strictObject({ name })

/** The application types, in the catalogue's order. */
export const APPLICATION_TYPES = [
  'private',
  'public',
  'management',
] as const satisfies readonly ApplicationType[]

/** Query of the permission catalogue: `application_type` filters by the type that may hold them. */
export const listPermissionsInput = v.strictObject({
  application_type: v.optional(v.picklist(APPLICATION_TYPES, 'must be private, public or management')),
})
