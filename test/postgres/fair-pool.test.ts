/**
 * Calls of the PostgreSQL store wait for a connection in their tenant's own line, served in turn:
 * a tenant with hundreds of calls in flight holds another's back by about one call, not by all of its own.
 */
import { describe, expect, it } from 'vitest'
import { TenantGate } from '../../adapters/postgres/gate.js'
import { postgresStore } from '../../adapters/postgres/index.js'
import { type GatedQuery, gateLineOf, KEY_LOOKUPS_LINE, reads } from '../../adapters/postgres/reads.js'
import { tables } from '../../adapters/postgres/tables.js'
import { describePostgres, dropSchemas, freshSchema, testPool } from './database.js'

describe('the tenant gate', () => {
  it('with one place, B’s call queued after 100 of A’s waits for one of A’s turns, not all 99', async () => {
    const gate = new TenantGate(1, 5000)
    const order: string[] = []
    const call = (tenant: string, n: number) =>
      gate.run(tenant, async () => {
        await new Promise((resolve) => setImmediate(resolve))
        order.push(`${tenant}${n}`)
      })
    const calls = Array.from({ length: 100 }, (_, n) => call('A', n))
    calls.push(call('B', 0))
    await Promise.all(calls)
    // A0 runs; A's line came first, so A1 has the next turn, then B0.
    expect(order.slice(0, 4)).toEqual(['A0', 'A1', 'B0', 'A2'])
    expect(order.filter((id) => id.startsWith('A'))).toEqual(Array.from({ length: 100 }, (_, n) => `A${n}`))
  })

  it("looks every key up in one line, whatever its hash: made-up keys take one line's turns, not one line each", async () => {
    const lines: string[] = []
    const read = reads(tables('tv'), async (config: GatedQuery) => {
      lines.push(gateLineOf(config))
      return { rows: [] } as never
    })
    for (const hash of ['h1', 'h2', 'h3']) expect(await read.findKey(hash)).toBeNull()
    await read.getTenant('tenant-a')
    expect(lines).toEqual([KEY_LOOKUPS_LINE, KEY_LOOKUPS_LINE, KEY_LOOKUPS_LINE, 'tenant-a'])
  })

  it('a call that waits past its time fails as a connection timeout, leaving the line', async () => {
    const gate = new TenantGate(1, 20)
    let release: () => void = () => {}
    const running = gate.run('A', () => new Promise<void>((resolve) => (release = resolve)))
    await expect(gate.run('B', async () => 'never')).rejects.toThrow(
      /timeout exceeded when trying to connect/,
    )
    expect(gate.queued).toBe(0)
    release()
    await running
    expect(await gate.run('B', async () => 'now')).toBe('now')
  })
})

describePostgres('the PostgreSQL store’s pool', (url) => {
  it('with one connection, B’s read issued after 300 of A’s is answered among the first few', async () => {
    const pool = testPool(url, 1)
    const schema = freshSchema()
    try {
      const store = await postgresStore({ pool, schema })
      const order: string[] = []
      const reads = Array.from({ length: 300 }, (_, n) =>
        store.getToken('tenant-a', `t${n}`).then(() => order.push(`a${n}`)),
      )
      reads.push(store.getToken('tenant-b', 'b').then(() => order.push('b')))
      await Promise.all(reads)
      // A plain pool answers in arrival order: B last, at 301.
      expect(order.indexOf('b')).toBeLessThan(5)
      await store.close()
    } finally {
      await dropSchemas(pool, [schema])
      await pool.end()
    }
  })
})
