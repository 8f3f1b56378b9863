import type { Principal } from '../call/index.js'
import { applyMask } from '../expressions/index.js'
import type {
  AccessDecision,
  AccessRule,
  AccessTrace,
  ApplicationType,
  Condition,
  ExpressionBudget,
  Json,
  Permission,
  RuleConsidered,
  StoredToken,
  Token,
  Transform,
} from '../kernel/index.js'
import { forbidden, noteRevealed, noteUse } from '../kernel/index.js'

export type { Principal }

/** Throws `forbidden` unless the principal holds `permission` (outside token rules: reactors, applications). */
export function requirePermission(principal: Principal, permission: Permission): void {
  if (!principal.permissions.includes(permission)) {
    principal.recorder?.decided(new Decision(principal, permission, null, -1))
    throw forbidden(`missing permission ${permission}`)
  }
  noteUse(principal.observed, { permission })
}

/** Throws `forbidden` unless the principal is an application of one of `types`. */
export function requireType(principal: Principal, types: readonly ApplicationType[], what: string): void {
  if (principal.kind !== 'application' || !types.includes(principal.type)) {
    throw forbidden(`${what} needs a ${types.join(' or ')} application key`)
  }
}

function conditionHolds(c: Condition, token: Pick<Token, 'id' | 'containers'>): boolean {
  const test = (value: string) => (c.operator === 'equals' ? value === c.value : value.startsWith(c.value))
  return c.attribute === 'id' ? test(token.id) : token.containers.some(test)
}

/** Whether a rule's scope (container prefix or ANDed conditions) covers the token. */
export function ruleMatches(rule: AccessRule, token: Pick<Token, 'id' | 'containers'>): boolean {
  if (rule.container !== undefined) return token.containers.some((c) => c.startsWith(rule.container!))
  if (rule.conditions !== undefined) return rule.conditions.every((c) => conditionHolds(c, token))
  return true
}

const DEFAULT_TRANSFORM: Partial<Record<Permission, Transform>> = {
  'token:read': 'mask',
  'token:use': 'reveal',
}

/**
 * The transform under which the principal may perform `permission` on the token, or null when it may not.
 * With rules: the matching rule granting `permission` with the lowest priority number decides.
 * Without rules: the permission covers every token, reads masked and `token:use` in plaintext.
 */
export function tokenAccess(
  principal: Principal,
  permission: Permission,
  token: Pick<Token, 'id' | 'containers'>,
): Transform | null {
  const { transform, rule } =
    principal.recorder === undefined
      ? decide(principal, permission, token)
      : traced(principal, permission, token)
  if (transform !== null && principal.observed && principal.observed.uses !== false) {
    const use = { permission, tokenId: token.id, containers: token.containers, transform }
    noteUse(principal.observed, rule < 0 ? use : { ...use, rule })
  }
  return transform
}

/**
 * `tokenAccess`'s decision and the index of the rule that made it (-1: none, or no rules), untold.
 * With `seen`, each rule's verdict is pushed to it as the loop weighs it, in the rules' order (the
 * one that decides is marked `outranked` here; `traced` marks it).
 */
function decide(
  principal: Pick<Principal, 'rules' | 'permissions'>,
  permission: Permission,
  token: Pick<Token, 'id' | 'containers'>,
  seen?: RuleConsidered[],
): { transform: Transform | null; rule: number } {
  const rules = principal.rules
  if (rules?.length) {
    let best = -1
    for (let i = 0; i < rules.length; i++) {
      const rule = rules[i]!
      const grants = rule.permissions.includes(permission)
      const covers = grants && ruleMatches(rule, token)
      if (seen)
        seen.push(considered(rule, i, !grants ? 'lacks_permission' : covers ? 'outranked' : 'does_not_cover'))
      if (!covers) continue
      if (best < 0 || rule.priority < rules[best]!.priority) best = i
    }
    return { transform: best < 0 ? null : rules[best]!.transform, rule: best }
  }
  if (!principal.permissions.includes(permission)) return { transform: null, rule: -1 }
  return { transform: DEFAULT_TRANSFORM[permission] ?? 'reveal', rule: -1 }
}

/** One rule as `decide` weighed it. */
function considered(rule: AccessRule, index: number, verdict: RuleConsidered['verdict']): RuleConsidered {
  const out: RuleConsidered = {
    index,
    description: rule.description,
    priority: rule.priority,
    transform: rule.transform,
    verdict,
  }
  if (rule.container !== undefined) out.container = rule.container
  return out
}

/**
 * `decide`, its outcome told to the principal's recorder as an `AccessDecision` (test mode): the
 * decision and references to what it weighed, its trace built only when read.
 */
function traced(
  principal: Principal,
  permission: Permission,
  token: Pick<Token, 'id' | 'containers'>,
): { transform: Transform | null; rule: number } {
  const decision = decide(principal, permission, token)
  principal.recorder!.decided(new Decision(principal, permission, decision.transform, decision.rule, token))
  return decision
}

/**
 * One decision of the evaluator, explained on demand: `trace()` runs `decide` again over the same
 * rules and token with each verdict written down (the same loop, so the same decision), sorts the
 * rules and writes the reason. Recording costs one object; a trace read costs what explaining did.
 */
class Decision implements AccessDecision {
  // What `decide` and the trace read, and nothing else of the call: a kept decision holds no more.
  private readonly kind: Principal['kind']
  private readonly id: string
  private readonly rules: Principal['rules']
  private readonly permissions: Principal['permissions']
  private readonly tokenId: string | undefined
  private readonly containers: readonly string[] | undefined

  constructor(
    principal: Principal,
    readonly permission: Permission,
    readonly decision: Transform | null,
    private readonly rule: number,
    token?: Pick<Token, 'id' | 'containers'>,
  ) {
    this.kind = principal.kind
    this.id = principal.id
    this.rules = principal.rules
    this.permissions = principal.permissions
    this.tokenId = token?.id
    // The token as read for this call (a write puts a new record, never changes this one).
    this.containers = token?.containers
  }

  trace(): AccessTrace {
    const { permission, decision, kind } = this
    const who = { kind, id: this.id }
    if (this.tokenId === undefined || this.containers === undefined) {
      const reason = `the ${kind} does not hold the permission ${permission} (rules decide token access only)`
      return { permission, principal: who, by: 'permissions', rules: [], decision, reason }
    }
    const token = { id: this.tokenId, containers: [...this.containers] }
    const seen: RuleConsidered[] = []
    decide({ rules: this.rules, permissions: this.permissions }, permission, token, seen)
    const chosen = seen[this.rule]
    if (chosen) chosen.verdict = 'decided'
    seen.sort((a, b) => a.priority - b.priority || a.index - b.index)
    const trace: AccessTrace = {
      permission,
      token_id: token.id,
      containers: [...token.containers],
      principal: who,
      by: this.rules?.length ? 'rules' : 'permissions',
      rules: seen,
      decision,
      reason: reasonOf(permission, seen, decision, chosen),
    }
    if (chosen) trace.rule = chosen.index
    return trace
  }
}

/** The sentence of a trace: which rule decided, or why none did. */
function reasonOf(
  permission: Permission,
  seen: readonly RuleConsidered[],
  transform: Transform | null,
  chosen: RuleConsidered | undefined,
): string {
  if (chosen) {
    const others = seen.filter((r) => r.verdict === 'outranked').length
    return `rule ${chosen.index} "${chosen.description}" (priority ${chosen.priority}) grants ${permission} over the token's containers with ${chosen.transform}${others ? `; ${others} other matching rule(s) have a higher priority number or come later` : ''}`
  }
  if (seen.length === 0) {
    return transform === null
      ? `no rules, and the permission ${permission} is not held`
      : `no rules: the permission ${permission} covers every token, with the default transform ${transform}`
  }
  const lacking = seen.filter((r) => r.verdict === 'lacks_permission').length
  const uncovering = seen.length - lacking
  return `no rule grants ${permission} over this token: ${lacking} rule(s) lack the permission, ${uncovering} do not cover its containers`
}

/** Like `tokenAccess`, but throws `forbidden` when access is refused. */
export function requireTokenAccess(
  principal: Principal,
  permission: Permission,
  token: Pick<Token, 'id' | 'containers'>,
): Transform {
  const transform = tokenAccess(principal, permission, token)
  if (transform === null) throw forbidden(`missing ${permission} access to token ${token.id}`)
  return transform
}

/**
 * Throws `forbidden` unless the principal may read the token in plaintext (`token:read` under a
 * `reveal` transform): what changing what decides a token's visibility needs, since such a change
 * could show its caller, or any later reader, more than it could read. `what` names the change.
 */
export function requireReveal(
  principal: Principal,
  token: Pick<Token, 'id' | 'containers'>,
  what: string,
): void {
  if (tokenAccess(principal, 'token:read', token) !== 'reveal') {
    throw forbidden(`${what} needs token:read access with the reveal transform to token ${token.id}`)
  }
}

/**
 * How a write's answer shows the token as stored: under its mask, as Basis Theory answers writes,
 * but never more than the principal's own `token:read` access shows (no read access: no `data`;
 * masked: the stored mask evaluated). So a write never shows its caller more than a read would.
 */
export function shownUnderRead(principal: Principal, token: StoredToken): Token {
  // Not a use of token:read: the write needs none, its answer only shows no more than a read would.
  const read = decide(principal, 'token:read', token).transform
  return applyTransform(token, read === null || read === 'redact' ? 'redact' : 'mask')
}

/** The token's fields but `data`, built field by field (faster than a rest spread on a hot path). */
function shell(t: StoredToken): Token {
  const out: Token = {
    id: t.id,
    tenant_id: t.tenant_id,
    type: t.type,
    containers: t.containers,
    metadata: t.metadata,
    created_by: t.created_by,
    created_at: t.created_at,
  }
  if (t.mask !== undefined) out.mask = t.mask
  if (t.fingerprint !== undefined) out.fingerprint = t.fingerprint
  if (t.fingerprint_expression !== undefined) out.fingerprint_expression = t.fingerprint_expression
  if (t.expires_at !== undefined) out.expires_at = t.expires_at
  if (t.search_indexes !== undefined) out.search_indexes = t.search_indexes
  if (t.modified_by !== undefined) out.modified_by = t.modified_by
  if (t.modified_at !== undefined) out.modified_at = t.modified_at
  return out
}

/**
 * The token as the transform shows it: `redact` drops `data`; `mask` shows the token's mask
 * evaluated on its data as `data` (each `{{ … }}` expression in it; nothing without a mask, or when
 * the mask can't be evaluated on the data). The mask's work is charged to `budget` (the call's,
 * `ctx.budget`; default: a fresh one for this token): past it, the call fails with a 400 naming
 * the limit instead of hiding the data. `shownTo`: the caller the token is answered to, whose
 * observer (if any) is told when plaintext leaves (see `Observer.revealed`).
 */
export function applyTransform(
  token: StoredToken,
  transform: Transform,
  budget?: ExpressionBudget,
  shownTo?: Principal,
): Token {
  const shown = shell(token)
  if (transform === 'reveal') {
    shown.data = token.data
    noteRevealed(shownTo?.observed, token.id)
  } else if (transform === 'mask' && token.mask !== undefined) {
    const masked = maskedData(token, budget)
    if (masked !== undefined) shown.data = masked
  }
  return shown
}

/** The token as `mask` shows it, its mask already evaluated on its data to `masked`. */
export function withMaskedData(token: StoredToken, masked: Json): Token {
  const shown = shell(token)
  shown.data = masked
  return shown
}

/** The token's mask evaluated on its data, or undefined when that fails (the data then stays hidden). */
function maskedData(token: StoredToken, budget: ExpressionBudget | undefined): Json | undefined {
  try {
    return applyMask(token.mask!, token.data, 'mask', budget, token.tenant_id)
  } catch (error) {
    if (budget?.exhausted) throw error
    return undefined
  }
}

/** The token without `data`: how a react answer shows the tokens its formula's `tokenize` output made. */
export function withoutData(token: StoredToken): Token {
  return shell(token)
}

function scopeCovers(outer: AccessRule, inner: AccessRule): boolean {
  if (outer.container === undefined && outer.conditions === undefined) return true
  if (outer.container === '/') return true
  if (outer.container !== undefined) {
    if (inner.container !== undefined) return inner.container.startsWith(outer.container)
    return (inner.conditions ?? []).some(
      (c) => c.attribute === 'container' && c.value.startsWith(outer.container!) && c.value.endsWith('/'),
    )
  }
  // Every outer condition must be implied by the inner scope.
  return outer.conditions!.every((oc) => {
    if (oc.attribute === 'container' && oc.operator === 'starts_with' && inner.container !== undefined) {
      return inner.container.startsWith(oc.value)
    }
    return (inner.conditions ?? []).some(
      (ic) =>
        ic.attribute === oc.attribute &&
        (oc.operator === 'starts_with'
          ? ic.value.startsWith(oc.value)
          : ic.operator === 'equals' && ic.value === oc.value),
    )
  })
}

/**
 * Throws `forbidden` unless every permission in the grant is held by the grantor: each plain
 * permission, and each permission of each rule over the rule's scope (held without rules, or by a
 * rule of the grantor whose scope covers it). Transforms are not capped: the reference's sessions
 * guide has an application whose own reads are masked grant `reveal` on one token.
 */
export function requireGrantWithin(
  grantor: Pick<Principal, 'permissions' | 'rules'>,
  grant: { permissions: readonly Permission[]; rules: readonly AccessRule[] },
): void {
  const excess = grantExcess(grantor, grant)
  if (excess !== null) throw forbidden(excess)
}

/** What of `grant` the grantor does not hold, said as the refusal says it; null when it holds all. */
export function grantExcess(
  grantor: Pick<Principal, 'permissions' | 'rules'>,
  grant: { permissions: readonly Permission[]; rules: readonly AccessRule[] },
): string | null {
  const grantorRules = grantor.rules?.length ? grantor.rules : null
  const holds = (p: Permission) =>
    grantor.permissions.includes(p) || (grantorRules?.some((r) => r.permissions.includes(p)) ?? false)
  for (const p of grant.permissions) {
    if (!holds(p)) return `cannot grant ${p}: the authorizing application does not hold it`
  }
  for (const rule of grant.rules) {
    for (const p of rule.permissions) {
      const covered = grantorRules
        ? grantorRules.some((r) => r.permissions.includes(p) && scopeCovers(r, rule))
        : grantor.permissions.includes(p)
      if (!covered)
        return `cannot grant ${p} over this scope: the authorizing application does not hold it there`
    }
  }
  return null
}
