import type { AccessRule, ApplicationType, Permission, Transform } from '../../src/kernel/index.js'
import type { CallerUses, UseRecord } from './accounting.js'
import type { Held, Principals } from './principals.js'

/** A rule a caller holds, with what its calls did through it. */
export interface RuleUse {
  /** Its index in the caller's rules. */
  index: number
  rule: AccessRule
  /** The rule's permissions some call exercised through it. */
  used: Permission[]
  /** The rule's permissions no call exercised through it. */
  unused: Permission[]
  /** The containers (within the rule's scope) of the tokens reached through it. */
  containers: string[]
  /** The transforms the calls were granted through it. */
  transforms: Transform[]
}

/** What one application or session was granted, what its calls used, and the least grant that serves them. */
export interface CallerAccess {
  kind: 'application' | 'session'
  id: string
  name: string
  type: ApplicationType
  /** For a session: the public application that created it. */
  applicationId?: string
  /** Its calls' operations, as the journal names them. */
  operations: string[]
  used: {
    /** Permissions exercised without a rule (all of them, for a caller without rules). */
    permissions: Permission[]
    /** Each held rule through which some call was allowed. */
    rules: RuleUse[]
  }
  unused: {
    /** Permissions held and never exercised (with or without a rule). */
    permissions: Permission[]
    /** Held rules through which no call was allowed, whole. */
    rules: { index: number; rule: AccessRule }[]
  }
  /** The least grant under which every call it made is allowed as it was: its permissions and rules. */
  minimal: { permissions: Permission[]; rules: AccessRule[] }
}

/** `vault.usedAccess()`: per application and session, what it used beside what it holds. */
export interface UsedAccess {
  callers: CallerAccess[]
  /**
   * The applications as a fixture's `applications` entries (`admin.createApplication` inputs
   * without `tenantId`): each granted exactly its `minimal` access. Applications that made no
   * allowed call are left out (an application needs permissions or rules).
   */
  fixture(): { name: string; type: ApplicationType; permissions: Permission[]; rules?: AccessRule[] }[]
}

const sorted = <T extends string>(set: Iterable<T>) => [...new Set(set)].sort()

/** The token's containers the rule's container covers (the first one only: one is enough to match). */
function reached(rule: AccessRule, use: UseRecord): string[] {
  if (rule.container === undefined) return []
  const inside = (use.containers ?? []).filter((c) => c.startsWith(rule.container!))
  return inside.slice(0, 1)
}

/** The rules that allow exactly the decisions made through rules: one per (scope, transform). */
function minimalRules(records: UseRecord[]): AccessRule[] {
  const byScope = new Map<string, AccessRule>()
  for (const use of records) {
    if (!use.rule || use.transform === undefined) continue
    const { rule } = use.rule
    const scopes: Pick<AccessRule, 'container' | 'conditions'>[] =
      rule.container !== undefined
        ? reached(rule, use).map((container) => ({ container }))
        : [{ conditions: rule.conditions! }]
    for (const scope of scopes) {
      const key = `${JSON.stringify(scope)}\u0000${use.transform}`
      const held = byScope.get(key)
      if (held) {
        if (!held.permissions.includes(use.permission)) held.permissions.push(use.permission)
        held.priority = Math.min(held.priority, rule.priority)
        continue
      }
      const description = `used by the test run (narrowed from rule ${use.rule.index})`
      byScope.set(key, {
        description,
        priority: rule.priority,
        ...scope,
        transform: use.transform,
        permissions: [use.permission],
      })
    }
  }
  return [...byScope.values()].map((r) => ({ ...r, permissions: sorted(r.permissions) }))
}

function ruleUses(
  held: Held,
  records: UseRecord[],
): { used: RuleUse[]; unused: CallerAccess['unused']['rules'] } {
  const used: RuleUse[] = []
  const unused: CallerAccess['unused']['rules'] = []
  held.rules.forEach((rule, index) => {
    const through = records.filter((r) => r.rule?.index === index)
    if (!through.length) {
      unused.push({ index, rule })
      return
    }
    const permissions = sorted(through.map((r) => r.permission))
    used.push({
      index,
      rule,
      used: permissions,
      unused: rule.permissions.filter((p) => !permissions.includes(p)),
      containers: sorted(through.flatMap((r) => reached(rule, r))),
      transforms: sorted(through.flatMap((r) => (r.transform ? [r.transform] : []))),
    })
  })
  return { used, unused }
}

/** One caller's report, from what it holds now and the decisions its calls made. */
function callerAccess(held: Held, caller: CallerUses | undefined): CallerAccess {
  const records = [...(caller?.uses.values() ?? [])]
  const plain = sorted(records.filter((r) => !r.rule).map((r) => r.permission))
  const everyUsed = new Set(records.map((r) => r.permission))
  const rules = ruleUses(held, records)
  const out: CallerAccess = {
    kind: held.kind,
    id: held.id,
    name: held.name,
    type: held.type,
    operations: sorted(records.map((r) => r.operation)),
    used: { permissions: plain, rules: rules.used },
    unused: { permissions: held.permissions.filter((p) => !everyUsed.has(p)), rules: rules.unused },
    minimal: { permissions: plain, rules: minimalRules(records) },
  }
  if (held.applicationId !== undefined) out.applicationId = held.applicationId
  return out
}

/** The used-access report of every application the vault holds and every session that acted. */
export function usedAccess(
  principals: Principals,
  callers: CallerUses[],
  applicationIds: string[],
): UsedAccess {
  const byId = new Map(callers.map((c) => [c.principalId, c]))
  const ids = [...new Set([...applicationIds, ...callers.map((c) => c.principalId)])]
  const report = ids.flatMap((id) => {
    const held = principals.get(id)
    return held ? [callerAccess(held, byId.get(id))] : []
  })
  return {
    callers: report,
    fixture: () =>
      report
        .filter((c) => c.kind === 'application' && (c.minimal.permissions.length || c.minimal.rules.length))
        .map((c) => ({
          name: c.name,
          type: c.type,
          permissions: c.minimal.permissions,
          ...(c.minimal.rules.length ? { rules: c.minimal.rules } : {}),
        })),
  }
}
