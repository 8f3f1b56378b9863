import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../entry/index.js'
import { createTestVault } from '../../testing/vault.js'

/**
 * The test powers over the whole state (`exportState` answers every token in the clear) belong to
 * test mode only: the test kit's vault and a service made with `testMode: true` (the CLI's
 * `--test-mode`, whose `/_test/` control plane uses them). A production service has none.
 */
const POWERS = ['exportState', 'importState', 'clearState', 'allowTestEgress']

describe('test powers', () => {
  it('a production service’s admin has no exportState, importState or clearState', async () => {
    const service = createService({ store: memoryStore(), clock: manualClock(), runner: null })
    expect(POWERS.filter((name) => name in service.admin)).toEqual([])
    // @ts-expect-error a production admin has no exportState
    expect(service.admin.exportState).toBeUndefined()
    await service.close()
  })

  it('a service made with testMode: true has them, and they round-trip the state', async () => {
    const service = createService({
      store: memoryStore(),
      clock: manualClock('2030-01-01T00:00:00.000Z'),
      runner: null,
      testMode: true,
    })
    expect(POWERS.filter((name) => name in service.admin)).toEqual(POWERS)
    const tenant = await service.admin.createTenant({ name: 'powers' })
    const snapshot = await service.admin.exportState()
    await service.admin.clearState()
    expect((await service.admin.exportState()).records.tenants).toEqual([])
    await service.admin.importState(snapshot)
    expect((await service.admin.exportState()).records.tenants.map((t) => t.id)).toEqual([tenant.id])
    await service.close()
  })

  it('a test vault has them (snapshot, restore, reset go through them)', async () => {
    const vault = await createTestVault()
    expect(POWERS.filter((name) => name in vault.service.admin)).toEqual(POWERS)
    const token = await vault.client().tokens.create({ type: 'token', data: 'kept' })
    const snapshot = await vault.snapshot()
    await vault.reset()
    await expect(vault.client().tokens.get(token.id)).rejects.toMatchObject({ code: 'not_found' })
    await vault.restore(snapshot)
    expect((await vault.client().tokens.get(token.id)).data).toBe('kept')
    await vault.close()
  })
})
