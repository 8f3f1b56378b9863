/**
 * The heap after a load of expiring records (the sweep's side of test/core/lifecycle.test.ts): 20 000
 * rounds of tokens, children, sessions and transactions expire and are swept, and the heap returns
 * to its baseline.
 */
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock, type Permission } from '../../entry/index.js'

const ALL = ['token:create', 'token:read', 'token:update', 'token:delete'] as const

async function vault() {
  const clock = manualClock('2030-01-01T00:00:00.000Z')
  const store = memoryStore()
  // A round makes 5000 sessions before the sweep: above the 1000 a tenant may have unauthorized.
  // The audit log is off: its entries are kept for their retention (a year), not swept with what
  // they describe; this test is about the records the sweep deletes.
  const service = createService({
    store,
    clock,
    runner: null,
    maxUnauthorizedSessionsPerTenant: 10_000,
    auditLog: false,
  })
  const tenant = await service.admin.createTenant({ name: 't' })
  const app = async (type: 'private' | 'public', permissions: Permission[]) =>
    (await service.admin.createApplication({ tenantId: tenant.id, name: type, type, permissions })).key
  const key = await app('private', [...ALL])
  return { clock, service, key, client: service.connect(key), app }
}

describe('the sweep forgets what has expired', () => {
  it('after a load of expiring tokens, sessions and transactions, the heap returns to its baseline', async () => {
    setFlagsFromString('--expose-gc')
    const gc = runInNewContext('gc') as () => void
    const { clock, service, client, app, key: privateKey } = await vault()
    const publicKey = await app('public', ['token:create'])
    const heap = () => {
      for (let i = 0; i < 3; i++) gc()
      return process.memoryUsage().heapUsed
    }
    // Warm every code path once, then measure.
    const round = async (n: number) => {
      const expires_at = new Date(clock.now().getTime() + 60_000).toISOString()
      for (let i = 0; i < n; i++) {
        const parent = await client.tokens.create({
          type: 'token',
          data: { i, pad: 'x'.repeat(200) },
          expires_at,
        })
        await client.tokens.children.create(parent.id, { type: 'token', data: i, expires_at })
        if (i % 4 === 0) await service.connect(publicKey).sessions.create()
        if (i % 4 === 1) {
          const tx = await client.transactions.create()
          await service
            .connect(privateKey, { transactionId: tx.id })
            .tokens.update(parent.id, { metadata: { n: String(i) } })
          await client.transactions.commit(tx.id)
        }
      }
      clock.advance(25 * 3600_000)
      await service.admin.sweep()
    }
    await round(200)
    const baseline = heap()
    await round(20_000)
    const after = heap()
    expect(after).toBeLessThanOrEqual(baseline * 1.2)
  }, 180_000)
})
