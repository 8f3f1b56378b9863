import type pg from 'pg'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { postgresStore } from '../../adapters/postgres/index.js'
import { manualClock } from '../../src/kernel/clock.js'
import type { Permission } from '../../src/kernel/types.js'
import type { Store } from '../../src/store/contract.js'
import type { Op } from '../../src/store/index.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from './database.js'

const NOW = '2030-01-01T00:00:00.000Z'
const app = (permissions: Permission[], id = 'a1', key_hash = 'k1'): Op => ({
  op: 'application.put',
  application: { id, tenant_id: 'T', name: id, type: 'private', permissions, created_at: NOW, key_hash },
})

// Two stores on two pools over one schema stand for two server processes: each has its own cache.
describePostgres('postgres key lookup cache', (url) => {
  let poolA: pg.Pool
  let poolB: pg.Pool
  let a: Store
  let b: Store
  // b's cache ages by a manual clock: the test steps past its lifetime instead of waiting.
  const clock = manualClock(NOW)
  const schema = freshSchema()
  beforeAll(async () => {
    poolA = testPool(url, 2)
    poolB = testPool(url, 2)
    a = await postgresStore({ pool: poolA, schema })
    b = await postgresStore({ pool: poolB, schema, clock })
  })
  afterAll(async () => {
    await a.close()
    await b.close()
    await dropSchemas(poolA, [schema])
    await poolA.end()
    await poolB.end()
  })

  it('caches a key lookup (one frozen answer) for 500 ms: a revocation by another process shows at 500 ms, not before', async () => {
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
    const permissions = async () => {
      const seen = await b.findKey('k1')
      return seen?.kind === 'application' ? seen.application.permissions : seen
    }
    clock.advance(499)
    expect(await permissions()).toEqual(['token:read'])
    clock.advance(1)
    expect(await permissions()).toEqual(['token:read', 'token:create'])

    await a.write({ ops: [{ op: 'application.delete', tenant_id: 'T', id: 'a1' }] })
    expect(await a.findKey('k1')).toBeNull()
    clock.advance(499)
    expect(await permissions()).toEqual(['token:read', 'token:create'])
    clock.advance(1)
    expect(await b.findKey('k1')).toBeNull()
  })

  it('never caches an unknown key: a key created by another process works at once', async () => {
    expect(await b.findKey('k2')).toBeNull()
    await a.write({ ops: [app([], 'a2', 'k2')] })
    expect((await b.findKey('k2'))?.kind).toBe('application')
  })
})
