/**
 * What the evaluator tells the service's observation port (`ServiceOptions.observe`, see
 * src/kernel/observe.ts): a use for each decision that let a call act, never one for a refusal;
 * the deciding rule's index with rules, no `rule` when permissions alone decided.
 */
import { describe, expect, it } from 'vitest'
import { type Principal, requirePermission, tokenAccess } from '../../src/applications/access.js'
import type { AccessUse } from '../../src/kernel/observe.js'
import type { AccessRule, Permission } from '../../src/kernel/types.js'

function observed(permissions: Permission[], rules?: AccessRule[]) {
  const uses: AccessUse[] = []
  const principal: Principal = {
    tenantId: 't',
    id: 'app_1',
    kind: 'application',
    type: 'private',
    permissions,
    ...(rules ? { rules } : {}),
    observed: {
      port: { used: (_call, use) => uses.push(use), revealed: () => {} },
      call: { tenantId: 't', principalId: 'app_1', kind: 'application', operation: 'token.get' },
    },
  }
  return { principal, uses }
}

const token = { id: 'tok_1', containers: ['/pci/'] }
const rule = (priority: number, container: string): AccessRule => ({
  description: `r${priority}`,
  priority,
  container,
  transform: 'reveal',
  permissions: ['token:read'],
})

describe('uses told to the observation port', () => {
  it('the deciding rule index with rules (0 as well as others); nothing for a refusal', () => {
    const first = observed([], [rule(1, '/pci/'), rule(2, '/pci/')])
    tokenAccess(first.principal, 'token:read', token)
    const second = observed([], [rule(1, '/general/'), rule(2, '/pci/')])
    tokenAccess(second.principal, 'token:read', token)
    expect([...first.uses, ...second.uses]).toEqual([
      { permission: 'token:read', tokenId: 'tok_1', containers: ['/pci/'], transform: 'reveal', rule: 0 },
      { permission: 'token:read', tokenId: 'tok_1', containers: ['/pci/'], transform: 'reveal', rule: 1 },
    ])
    const refused = observed([], [rule(1, '/general/')])
    expect(tokenAccess(refused.principal, 'token:read', token)).toBe(null)
    expect(refused.uses).toEqual([])
  })

  it('without rules: the use has no rule; a permission not held tells nothing; one outside token rules tells only itself', () => {
    const held = observed(['token:read'])
    tokenAccess(held.principal, 'token:read', token)
    expect(held.uses).toEqual([
      { permission: 'token:read', tokenId: 'tok_1', containers: ['/pci/'], transform: 'mask' },
    ])
    expect('rule' in held.uses[0]!).toBe(false)
    const lacking = observed(['token:create'])
    expect(tokenAccess(lacking.principal, 'token:read', token)).toBe(null)
    expect(() => requirePermission(lacking.principal, 'reactor:read')).toThrow()
    expect(lacking.uses).toEqual([])
    const reactors = observed(['reactor:read'])
    requirePermission(reactors.principal, 'reactor:read')
    expect(reactors.uses).toEqual([{ permission: 'reactor:read' }])
  })
})
