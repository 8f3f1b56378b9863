import * as v from 'valibot'
import type { AccessRule, ApplicationType, Permission } from '../types.js'
import { containerPath } from './common.js'

/** Every permission name. */
export const PERMISSIONS = [
  'token:create',
  'token:read',
  'token:update',
  'token:delete',
  'token:use',
  'reactor:create',
  'reactor:read',
  'reactor:update',
  'reactor:delete',
  'application:create',
  'application:read',
  'application:update',
  'application:delete',
] as const satisfies readonly Permission[]

/** The permissions each application type may hold. */
export const PERMISSIONS_BY_TYPE: Record<ApplicationType, readonly Permission[]> = {
  private: PERMISSIONS.filter((p) => p.startsWith('token:')),
  public: ['token:create', 'token:update'],
  management: PERMISSIONS.filter((p) => p.startsWith('reactor:') || p.startsWith('application:')),
}

export const permission = v.picklist(PERMISSIONS, `must be one of ${PERMISSIONS.join(', ')}`)

const TOKEN_PERMISSIONS = PERMISSIONS.filter((p) => p.startsWith('token:'))
const tokenPermission = v.picklist(TOKEN_PERMISSIONS, `must be one of ${TOKEN_PERMISSIONS.join(', ')}`)

/** A list of permissions, duplicates dropped. */
export const permissionList = v.pipe(
  v.array(permission),
  v.transform((list) => [...new Set(list)]),
)

const condition = v.strictObject({
  attribute: v.picklist(['id', 'container'], 'must be id or container'),
  operator: v.picklist(['equals', 'starts_with'], 'must be equals or starts_with'),
  value: v.pipe(
    v.string(),
    v.minLength(1, 'must not be empty'),
    v.maxLength(200, 'must be at most 200 characters'),
  ),
})

/** An access rule: a container prefix or conditions (not both), a transform and token permissions. */
export const accessRule = v.pipe(
  v.strictObject({
    description: v.optional(v.pipe(v.string(), v.maxLength(500, 'must be at most 500 characters')), ''),
    priority: v.pipe(
      v.number('must be a number'),
      v.integer('must be a whole number'),
      v.minValue(0, 'must be at least 0'),
      v.maxValue(1_000_000, 'must be at most 1000000'),
    ),
    container: v.optional(containerPath),
    conditions: v.optional(
      v.pipe(
        v.array(condition),
        v.minLength(1, 'must hold at least one condition'),
        v.maxLength(10, 'must hold at most 10 conditions'),
      ),
    ),
    transform: v.picklist(['redact', 'mask', 'reveal'], 'must be redact, mask or reveal'),
    permissions: v.pipe(
      v.array(tokenPermission),
      v.minLength(1, 'must hold at least one permission'),
      v.transform((list) => [...new Set(list)]),
    ),
  }),
  v.forward(
    v.check(
      (rule) => rule.container === undefined || rule.conditions === undefined,
      'container and conditions are exclusive',
    ),
    ['container'],
  ),
  v.transform((rule) => rule as AccessRule),
)

/** A list of access rules (at most 50). */
export const ruleList = v.pipe(v.array(accessRule), v.maxLength(50, 'must hold at most 50 rules'))
