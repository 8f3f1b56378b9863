import * as v from 'valibot'
import type { AccessRule, ApplicationType, Permission } from '../kernel/index.js'
import { containerPath } from '../kernel/index.js'

/**
 * Every permission name, as the reference's catalogue lists them. `token:search` and the management
 * permissions `tenant:*`, `log:read`, `proxy:*`, `tenant:member:*`, `tenant:invitation:*` and
 * `report:read` are accepted by name: they gate features the vault may not have.
 */
export const PERMISSIONS = [
  'token:create',
  'token:read',
  'token:update',
  'token:delete',
  'token:use',
  'token:search',
  'reactor:create',
  'reactor:read',
  'reactor:update',
  'reactor:delete',
  'application:create',
  'application:read',
  'application:update',
  'application:delete',
  'tenant:read',
  'tenant:update',
  'tenant:delete',
  'log:read',
  'proxy:read',
  'proxy:create',
  'proxy:update',
  'proxy:delete',
  'tenant:member:read',
  'tenant:member:update',
  'tenant:member:delete',
  'tenant:invitation:create',
  'tenant:invitation:read',
  'tenant:invitation:update',
  'tenant:invitation:delete',
  'report:read',
  'webhook:create',
  'webhook:read',
  'webhook:update',
  'webhook:delete',
  'keys:create',
  'keys:read',
  'keys:delete',
  'token-intent:create',
  'token-intent:read',
  'token-intent:delete',
  'documents:create',
  'documents:read',
  'documents:reveal',
  'documents:delete',
] as const satisfies readonly Permission[]

/** The permissions each application type may hold: every `token:*` for private, the rest for management. */
export const PERMISSIONS_BY_TYPE: Record<ApplicationType, readonly Permission[]> = {
  private: PERMISSIONS.filter(
    (p) => p.startsWith('token:') || p.startsWith('documents:') || p.startsWith('token-intent:'),
  ),
  public: ['token:create', 'token:update', 'token-intent:create'],
  management: PERMISSIONS.filter(
    (p) => !p.startsWith('token:') && !p.startsWith('documents:') && !p.startsWith('token-intent:'),
  ),
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

const ruleShape = v.strictObject({
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
})

/**
 * An access rule of an application: a `container` (a prefix; `/` covers every token), a transform
 * and token permissions. `conditions` are for sessions only (the reference: "container is only
 * required for public and private applications, whilst conditions is only required for sessions").
 */
export const applicationRule = v.pipe(
  ruleShape,
  v.forward(
    v.check((rule) => rule.conditions === undefined, 'conditions apply only to sessions'),
    ['conditions'],
  ),
  v.forward(
    v.check((rule) => rule.container !== undefined, 'is required on an application rule'),
    ['container'],
  ),
  v.transform((rule) => rule as AccessRule),
)

/** An access rule of a session: a `container` or `conditions` (exactly one), a transform and token permissions. */
export const sessionRule = v.pipe(
  ruleShape,
  v.forward(
    v.check(
      (rule) => rule.container === undefined || rule.conditions === undefined,
      'container and conditions are exclusive',
    ),
    ['container'],
  ),
  v.forward(
    v.check(
      (rule) => rule.container !== undefined || rule.conditions !== undefined,
      'a session rule needs conditions or a container',
    ),
    ['conditions'],
  ),
  v.transform((rule) => rule as AccessRule),
)

/** A list of application rules (at most 50). */
export const ruleList = v.pipe(v.array(applicationRule), v.maxLength(50, 'must hold at most 50 rules'))

/** A list of session rules (at most 50). */
export const sessionRuleList = v.pipe(v.array(sessionRule), v.maxLength(50, 'must hold at most 50 rules'))
