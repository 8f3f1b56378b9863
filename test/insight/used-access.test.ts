import { afterEach, describe, expect, it } from 'vitest'
import type { AccessRule } from '../../src/kernel/types.js'
import { createTestVault, type TestVault } from '../../testing/vault.js'

let vault: TestVault
afterEach(() => vault?.close())

const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 }

/** A checkout: it creates a card, reads it revealed, lists what it holds masked under /general/. */
async function checkout(client: ReturnType<TestVault['client']>) {
  const t = await client.tokens.create({ type: 'card', data: card })
  await client.tokens.get(t.id)
  await client.tokens.create({ type: 'token', data: 'note-123456' })
  await client.tokens.list({ type: ['token'] })
  return t
}

const RULES: AccessRule[] = [
  {
    description: 'cards',
    priority: 1,
    container: '/',
    transform: 'reveal',
    permissions: ['token:create', 'token:read', 'token:update', 'token:delete', 'token:use'],
  },
  {
    description: 'never matches',
    priority: 2,
    container: '/bank/',
    transform: 'reveal',
    permissions: ['token:read'],
  },
]

describe('usedAccess', () => {
  it('lists what a scripted run exercised, what it never used, and the least grant that serves it', async () => {
    vault = await createTestVault({ private: { permissions: ['token:create', 'token:read'], rules: RULES } })
    await checkout(vault.client())
    await vault.client('management').reactorFormulas.list()
    const report = vault.usedAccess()
    const priv = report.callers.find((c) => c.id === vault.applications.private.id)!
    expect(priv.operations).toEqual(['token.create', 'token.get', 'token.list'])
    expect(priv.used.permissions).toEqual([])
    expect(priv.used.rules).toEqual([
      {
        index: 0,
        rule: RULES[0],
        used: ['token:create', 'token:read'],
        unused: ['token:update', 'token:delete', 'token:use'],
        containers: ['/general/high/', '/pci/high/'],
        transforms: ['reveal'],
      },
    ])
    expect(priv.unused).toEqual({ permissions: [], rules: [{ index: 1, rule: RULES[1] }] })
    expect(priv.minimal).toEqual({
      permissions: [],
      rules: [
        {
          description: 'used by the test run (narrowed from rule 0)',
          priority: 1,
          container: '/pci/high/',
          transform: 'reveal',
          permissions: ['token:create', 'token:read'],
        },
        {
          description: 'used by the test run (narrowed from rule 0)',
          priority: 1,
          container: '/general/high/',
          transform: 'reveal',
          permissions: ['token:create', 'token:read'],
        },
      ],
    })
    const mgmt = report.callers.find((c) => c.id === vault.applications.management.id)!
    expect(mgmt.used.permissions).toEqual(['reactor:read'])
    expect(mgmt.minimal).toEqual({ permissions: ['reactor:read'], rules: [] })
    expect(mgmt.unused.permissions).toContain('application:delete')
    const pub = report.callers.find((c) => c.id === vault.applications.public.id)!
    expect(pub).toMatchObject({ operations: [], unused: { permissions: ['token:create'] } })
  })

  it('a caller without rules uses permissions; token:delete granted and never called is unused', async () => {
    vault = await createTestVault({
      private: { permissions: ['token:create', 'token:read', 'token:delete'] },
    })
    await checkout(vault.client())
    const priv = vault.usedAccess().callers.find((c) => c.id === vault.applications.private.id)!
    expect(priv.used).toEqual({ permissions: ['token:create', 'token:read'], rules: [] })
    expect(priv.unused.permissions).toEqual(['token:delete'])
    expect(priv.minimal).toEqual({ permissions: ['token:create', 'token:read'], rules: [] })
  })

  it('the fixture it writes grants exactly enough: the same run passes under it, and fails without a permission', async () => {
    vault = await createTestVault({ private: { rules: RULES } })
    await checkout(vault.client())
    const [entry] = vault.usedAccess().fixture()
    expect(entry).toMatchObject({ name: 'private application', type: 'private' })
    const made = await vault.service.admin.createApplication({ tenantId: vault.tenant.id, ...entry! })
    await checkout(vault.service.connect(made.key))
    const narrower = entry!.rules!.map((r) => ({
      ...r,
      permissions: r.permissions.filter((p) => p !== 'token:read'),
    }))
    const less = await vault.service.admin.createApplication({
      tenantId: vault.tenant.id,
      ...entry!,
      rules: narrower,
    })
    await expect(checkout(vault.service.connect(less.key))).rejects.toMatchObject({ code: 'forbidden' })
  })

  it('a session is reported with the rule its calls went through', async () => {
    vault = await createTestVault()
    const t = await vault.client().tokens.create({ type: 'card', data: card })
    const session = await vault.client('public').sessions.create()
    const rule: AccessRule = {
      description: 'one card',
      priority: 1,
      conditions: [{ attribute: 'id', operator: 'equals', value: t.id }],
      transform: 'reveal',
      permissions: ['token:read'],
    }
    await vault.client().sessions.authorize({ nonce: session.nonce, rules: [rule] })
    await vault.service.connect(session.session_key).tokens.get(t.id)
    const seen = vault.usedAccess().callers.find((c) => c.kind === 'session')!
    expect(seen).toMatchObject({
      applicationId: vault.applications.public.id,
      operations: ['token.get'],
      used: { rules: [{ index: 0, used: ['token:read'], transforms: ['reveal'] }] },
      minimal: {
        permissions: [],
        rules: [{ conditions: rule.conditions, transform: 'reveal', permissions: ['token:read'] }],
      },
    })
    expect(vault.exposure().byApplication).toEqual({ [`session ${seen.id}`]: 1 })
  })
})
