import type { Principal } from '../call/index.js'
import type { AccessRule, Condition, Permission } from '../kernel/index.js'

/**
 * How far a key reaches over a tenant's tokens, decided from its permissions and rules alone (no
 * token read): whether it may do each of `permissions` on every token, on none, or on some. A
 * search or list answers only tokens the key reaches; when it reaches only some, a term that tests
 * a token's data (a `data:` or `fingerprint:` value) must not pick which heads are read, or the
 * work would tell whether a token the key can't read holds the value (see `planOf`).
 */
export type Reach = 'every' | 'some' | 'none'

/** Whether a condition holds for every token (every token has at least one container, `/…/`). */
function holdsForAll(c: Condition): boolean {
  if (c.operator !== 'starts_with') return false
  return c.value === '' || (c.attribute === 'container' && c.value === '/')
}

/** Whether a rule's scope covers every token: the root container, or conditions that always hold. */
function coversAll(rule: AccessRule): boolean {
  if (rule.container !== undefined) return rule.container === '' || rule.container === '/'
  return (rule.conditions ?? []).every(holdsForAll)
}

/**
 * The key's reach for `permissions` together. Without rules its permissions cover every token or
 * none; with rules, a token is reached for a permission when some rule granting it matches (see
 * `tokenAccess`): every token when, for each permission, a rule granting it covers every token;
 * else `some` (a rule's scope can't be proven empty without the tokens).
 */
export function reachOf(principal: Principal, permissions: readonly Permission[]): Reach {
  const { rules } = principal
  if (!rules?.length) return permissions.every((p) => principal.permissions.includes(p)) ? 'every' : 'none'
  const granting = (p: Permission) => rules.filter((r) => r.permissions.includes(p))
  if (permissions.some((p) => granting(p).length === 0)) return 'none'
  return permissions.every((p) => granting(p).some(coversAll)) ? 'every' : 'some'
}
