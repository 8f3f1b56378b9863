/**
 * What an access trace says, whole, as docs/console.md describes it: the permission asked, the
 * caller, the token's id and containers, `by`, each rule lowest priority number first with its
 * verdict (and its container when it has one), the decision, the deciding rule, and a `reason`
 * sentence that counts the rules: outranked ones beside the deciding rule; rules lacking the
 * permission and rules not covering the token when none decides; none at all for a caller without
 * rules, and for a permission refused outside token rules.
 */
import { describe, expect, it } from 'vitest'
import { type Principal, requirePermission, tokenAccess } from '../../src/applications/access.js'
import type { AccessTrace } from '../../src/kernel/access-trace.js'
import type { AccessRule, Permission } from '../../src/kernel/types.js'

function traced(permissions: Permission[], rules: AccessRule[] | undefined) {
  const traces: AccessTrace[] = []
  const principal: Principal = {
    tenantId: 't',
    id: 'app_1',
    kind: 'application',
    type: 'private',
    permissions,
    ...(rules ? { rules } : {}),
    recorder: { decided: (d) => traces.push(d.trace()), journaled: () => {} },
  }
  return { principal, traces }
}

const token = { id: 'tok_1', containers: ['/pci/high/'] }
const read: Permission[] = ['token:read']
const pci = (priority: number, transform: 'mask' | 'reveal', description = `p${priority}`): AccessRule => ({
  description,
  priority,
  container: '/pci/',
  transform,
  permissions: read,
})

describe('an access trace, whole', () => {
  it('the deciding rule, and how many matching rules it outranked', () => {
    const { principal, traces } = traced(
      [],
      [pci(9, 'reveal', 'late'), pci(2, 'mask', 'first'), pci(2, 'reveal', 'tie')],
    )
    expect(tokenAccess(principal, 'token:read', token)).toBe('mask')
    expect(traces).toEqual([
      {
        permission: 'token:read',
        principal: { kind: 'application', id: 'app_1' },
        token_id: 'tok_1',
        containers: ['/pci/high/'],
        by: 'rules',
        rules: [
          {
            index: 1,
            description: 'first',
            priority: 2,
            container: '/pci/',
            transform: 'mask',
            verdict: 'decided',
          },
          {
            index: 2,
            description: 'tie',
            priority: 2,
            container: '/pci/',
            transform: 'reveal',
            verdict: 'outranked',
          },
          {
            index: 0,
            description: 'late',
            priority: 9,
            container: '/pci/',
            transform: 'reveal',
            verdict: 'outranked',
          },
        ],
        decision: 'mask',
        rule: 1,
        reason:
          'rule 1 "first" (priority 2) grants token:read over the token\'s containers with mask; 2 other matching rule(s) have a higher priority number or come later',
      },
    ])
  })

  it('a rule deciding alone says nothing of others', () => {
    const { principal, traces } = traced([], [pci(1, 'reveal', 'only')])
    tokenAccess(principal, 'token:read', token)
    expect(traces[0]!.reason).toBe(
      'rule 0 "only" (priority 1) grants token:read over the token\'s containers with reveal',
    )
  })

  it('no rule deciding: how many lack the permission and how many do not cover the token', () => {
    const conditions: AccessRule = {
      description: 'by id',
      priority: 1,
      conditions: [{ attribute: 'id', operator: 'equals', value: 'other' }],
      transform: 'reveal',
      permissions: read,
    }
    const general = { ...pci(2, 'reveal'), container: '/general/' }
    const writes = { ...pci(3, 'reveal'), permissions: ['token:create'] as Permission[] }
    const { principal, traces } = traced([], [conditions, general, writes])
    expect(tokenAccess(principal, 'token:read', token)).toBe(null)
    const [trace] = traces
    expect(trace!.rules.map((r) => [r.index, r.verdict, r.container])).toEqual([
      [0, 'does_not_cover', undefined],
      [1, 'does_not_cover', '/general/'],
      [2, 'lacks_permission', '/pci/'],
    ])
    // A rule without a container is traced without the key, not with it undefined.
    expect(Object.hasOwn(trace!.rules[0]!, 'container')).toBe(false)
    expect(trace!.rule).toBeUndefined()
    expect(trace!.reason).toBe(
      'no rule grants token:read over this token: 1 rule(s) lack the permission, 2 do not cover its containers',
    )
  })

  it('a caller without rules: the permission held covers every token with its default transform; not held, it refuses', () => {
    const held = traced(['token:read'], undefined)
    expect(tokenAccess(held.principal, 'token:read', token)).toBe('mask')
    expect(held.traces[0]).toMatchObject({
      by: 'permissions',
      rules: [],
      decision: 'mask',
      reason: 'no rules: the permission token:read covers every token, with the default transform mask',
    })
    expect(held.traces[0]!.rule).toBeUndefined()
    const lacking = traced(['token:create'], undefined)
    expect(tokenAccess(lacking.principal, 'token:read', token)).toBe(null)
    expect(lacking.traces[0]).toMatchObject({
      decision: null,
      reason: 'no rules, and the permission token:read is not held',
    })
  })

  it('a permission refused outside token rules', () => {
    const { principal, traces } = traced([], undefined)
    expect(() => requirePermission(principal, 'reactor:read')).toThrow('missing permission reactor:read')
    expect(traces).toEqual([
      {
        permission: 'reactor:read',
        principal: { kind: 'application', id: 'app_1' },
        by: 'permissions',
        rules: [],
        decision: null,
        reason: 'the application does not hold the permission reactor:read (rules decide token access only)',
      },
    ])
  })
})
