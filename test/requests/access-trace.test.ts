import { describe, expect, it } from 'vitest'
import { type Principal, requirePermission, tokenAccess } from '../../src/applications/access.js'
import type { AccessTrace } from '../../src/kernel/access-trace.js'
import { ServiceError } from '../../src/kernel/errors.js'
import type { AccessRule, Condition, Permission, Transform } from '../../src/kernel/types.js'
import { createTestVault } from '../../testing/index.js'

/**
 * The evaluator explains its own decision: on a table of rule sets, the trace's decision is the
 * transform `tokenAccess` returns, the deciding rule is the one with the lowest priority number
 * (ties: listed first), and each other rule says why it did not decide.
 */
const rule = (
  description: string,
  priority: number,
  scope: { container?: string; conditions?: Condition[] },
  permissions: Permission[],
  transform: Transform,
): AccessRule => ({ description, priority, transform, permissions, ...scope })

const principal = (
  kind: 'application' | 'session',
  permissions: Permission[],
  rules: AccessRule[] | undefined,
  traces?: AccessTrace[],
): Principal => ({
  tenantId: 't',
  id: kind === 'session' ? 'ses_1' : 'app_1',
  kind,
  type: kind === 'session' ? 'public' : 'private',
  permissions,
  ...(rules ? { rules } : {}),
  ...(traces ? { recorder: { decided: (d) => traces.push(d.trace()), journaled: () => {} } } : {}),
})

interface Case {
  name: string
  kind?: 'application' | 'session'
  permissions?: Permission[]
  rules?: AccessRule[]
  permission: Permission
  containers: string[]
  id?: string
  decision: Transform | null
  rule?: number
  verdicts: Record<number, AccessTrace['rules'][number]['verdict']>
}

const CASES: Case[] = [
  {
    name: 'priority tie: the rule listed first decides',
    rules: [
      rule('first', 5, { container: '/pci/' }, ['token:read'], 'mask'),
      rule('second', 5, { container: '/pci/' }, ['token:read'], 'reveal'),
    ],
    permission: 'token:read',
    containers: ['/pci/high/'],
    decision: 'mask',
    rule: 0,
    verdicts: { 0: 'decided', 1: 'outranked' },
  },
  {
    name: 'lower priority number wins over the order listed',
    rules: [
      rule('broad', 10, { container: '/' }, ['token:read'], 'redact'),
      rule('narrow', 1, { container: '/pci/' }, ['token:read'], 'reveal'),
    ],
    permission: 'token:read',
    containers: ['/pci/'],
    decision: 'reveal',
    rule: 1,
    verdicts: { 0: 'outranked', 1: 'decided' },
  },
  {
    name: 'container prefix: /pci/ covers /pci/high/ but not /pcix/',
    rules: [rule('pci', 1, { container: '/pci/' }, ['token:read'], 'reveal')],
    permission: 'token:read',
    containers: ['/pcix/'],
    decision: null,
    verdicts: { 0: 'does_not_cover' },
  },
  {
    name: 'permissions per rule: a covering rule without the permission does not decide',
    rules: [
      rule('updates only', 1, { container: '/' }, ['token:update'], 'reveal'),
      rule('reads masked', 2, { container: '/' }, ['token:read'], 'mask'),
    ],
    permission: 'token:read',
    containers: ['/general/'],
    decision: 'mask',
    rule: 1,
    verdicts: { 0: 'lacks_permission', 1: 'decided' },
  },
  {
    name: 'no rule grants the permission: refused',
    rules: [rule('updates only', 1, { container: '/' }, ['token:update'], 'reveal')],
    permission: 'token:read',
    containers: ['/general/'],
    decision: null,
    verdicts: { 0: 'lacks_permission' },
  },
  {
    name: 'session: conditions on the id decide',
    kind: 'session',
    rules: [
      rule(
        'that token',
        1,
        { conditions: [{ attribute: 'id', operator: 'equals', value: 'tok_1' }] },
        ['token:read'],
        'reveal',
      ),
    ],
    permission: 'token:read',
    containers: ['/general/'],
    id: 'tok_2',
    decision: null,
    verdicts: { 0: 'does_not_cover' },
  },
  {
    name: 'session: a container condition matches',
    kind: 'session',
    rules: [
      rule(
        'cards',
        1,
        { conditions: [{ attribute: 'container', operator: 'starts_with', value: '/cards/' }] },
        ['token:read'],
        'reveal',
      ),
    ],
    permission: 'token:read',
    containers: ['/cards/visa/'],
    decision: 'reveal',
    rule: 0,
    verdicts: { 0: 'decided' },
  },
  {
    name: 'no rules: token:read is masked by default',
    permissions: ['token:read'],
    permission: 'token:read',
    containers: ['/general/'],
    decision: 'mask',
    verdicts: {},
  },
  {
    name: 'no rules, no permission: refused',
    permissions: ['token:create'],
    permission: 'token:read',
    containers: ['/general/'],
    decision: null,
    verdicts: {},
  },
]

describe('access traces come from the evaluator', () => {
  for (const c of CASES) {
    it(c.name, () => {
      const token = { id: c.id ?? 'tok_1', containers: c.containers }
      const untraced = tokenAccess(
        principal(c.kind ?? 'application', c.permissions ?? [], c.rules),
        c.permission,
        token,
      )
      const traces: AccessTrace[] = []
      const traced = tokenAccess(
        principal(c.kind ?? 'application', c.permissions ?? [], c.rules, traces),
        c.permission,
        token,
      )
      expect(traced).toBe(untraced)
      expect(traces).toHaveLength(1)
      const trace = traces[0]!
      expect(trace.decision).toBe(c.decision)
      expect(trace.rule).toBe(c.rule)
      expect(trace.by).toBe(c.rules ? 'rules' : 'permissions')
      expect(Object.fromEntries(trace.rules.map((r) => [r.index, r.verdict]))).toEqual(c.verdicts)
      // Lowest priority number first, ties in the order listed.
      const order = trace.rules.map((r) => [r.priority, r.index])
      expect(order).toEqual([...order].sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!))
      if (c.rule !== undefined) expect(trace.reason).toContain(`rule ${c.rule} "`)
      expect(trace.token_id).toBe(token.id)
    })
  }

  it('a refused permission outside token rules is traced', () => {
    const traces: AccessTrace[] = []
    expect(() => requirePermission(principal('application', [], undefined, traces), 'reactor:read')).toThrow(
      ServiceError,
    )
    expect(traces[0]).toMatchObject({ permission: 'reactor:read', decision: null, by: 'permissions' })
  })

  it('the thrown error carries the trace in test mode, naming the refusing rule', async () => {
    const vault = await createTestVault({
      private: {
        permissions: ['token:create', 'token:read'],
        rules: [
          rule('writes anywhere', 1, { container: '/' }, ['token:create'], 'reveal'),
          rule('reads of /open/ only', 2, { container: '/open/' }, ['token:read'], 'reveal'),
        ],
      },
    })
    const created = await vault.client().tokens.create({ type: 'token', data: 'x', containers: ['/closed/'] })
    const error = await vault
      .client()
      .tokens.get(created.id)
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ServiceError)
    const trace = (error as ServiceError).trace?.at(-1)
    expect(trace).toMatchObject({ permission: 'token:read', decision: null, token_id: created.id })
    expect(trace?.rules.find((r) => r.description === 'reads of /open/ only')?.verdict).toBe('does_not_cover')
    await vault.close()
  })
})
