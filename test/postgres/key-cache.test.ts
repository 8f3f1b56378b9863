import type pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import type { Op, Permission } from '../../src/kernel/types.js'
import type { Store } from '../../src/store/contract.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from './database.js'

const NOW = '2030-01-01T00:00:00.000Z'
const app = (permissions: Permission[], id = 'a1', key_hash = 'k1'): Op => ({
  op: 'application.put',
  application: { id, tenant_id: 'T', name: id, type: 'private', permissions, created_at: NOW, key_hash },
})

/** Polls `check` until it holds, failing after `ms`; answers how long it took. */
async function within(ms: number, check: () => Promise<boolean>): Promise<number> {
  const start = performance.now()
  while (!(await check())) {
    if (performance.now() - start > ms) throw new Error(`not within ${ms} ms`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return performance.now() - start
}

// Two stores on two pools over one schema stand for two server processes: each has its own cache.
describePostgres('postgres key lookup cache', (url) => {
  let poolA: pg.Pool
  let poolB: pg.Pool
  let a: Store
  let b: Store
  const schema = freshSchema()
  beforeAll(async () => {
    poolA = testPool(url, 2)
    poolB = testPool(url, 2)
    a = await postgresStore({ pool: poolA, schema })
    b = await postgresStore({ pool: poolB, schema })
  })
  afterAll(async () => {
    await a.close()
    await b.close()
    await dropSchemas(poolA, [schema])
    await poolA.end()
    await poolB.end()
  })

  it('caches a key lookup (one frozen answer) and sees a revocation by another process within 1 s', async () => {
    await a.write({ ops: [app(['token:read'])] })
    const first = await b.findKey('k1')
    const second = await b.findKey('k1')
    expect(second).toBe(first)
    expect(
      Object.isFrozen(first) && first?.kind === 'application' && Object.isFrozen(first.application),
    ).toBe(true)

    await a.write({ ops: [app(['token:read', 'token:create'])] })
    // The writing process sees its own change at once.
    const own = await a.findKey('k1')
    expect(own?.kind === 'application' && own.application.permissions).toEqual(['token:read', 'token:create'])
    await within(1000, async () => {
      const seen = await b.findKey('k1')
      return seen?.kind === 'application' && seen.application.permissions.length === 2
    })

    await a.write({ ops: [{ op: 'application.delete', tenant_id: 'T', id: 'a1' }] })
    expect(await a.findKey('k1')).toBeNull()
    await within(1000, async () => (await b.findKey('k1')) === null)
  })

  it('never caches an unknown key: a key created by another process works at once', async () => {
    expect(await b.findKey('k2')).toBeNull()
    await a.write({ ops: [app([], 'a2', 'k2')] })
    expect((await b.findKey('k2'))?.kind).toBe('application')
  })
})
