/**
 * A search yields to other work where its work is: as it matches candidates, not as it finds their
 * ids. Finding a batch's ids is cheap and matching each head against a query of many wildcards is
 * not; a walk that yielded while finding and then matched a batch of 128 heads in one block held
 * the event loop 3-6 ms a batch (`npm run bench:attacks`, attack (d)).
 */
import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { delegatingStore } from '../../src/store/delegate.js'
import type { Op } from '../../src/store/index.js'
import { setup } from './setup.js'

describe('a search paces itself as it matches', () => {
  it('reads a batch of heads before any yield, and yields between that read and the next', async () => {
    const events: string[] = []
    const base = memoryStore()
    const store = delegatingStore(base, {
      async getTokenHeads(...args) {
        events.push(`heads:${args[1].length}`)
        return base.getTokenHeads(...args)
      },
    })
    const { client, tenant } = await setup({ store })
    const ops: Op[] = Array.from({ length: 300 }, (_, i) => ({
      op: 'token.put' as const,
      token: {
        id: `t${String(i).padStart(4, '0')}`,
        tenant_id: tenant.id,
        type: 'w',
        data: i,
        containers: ['/general/high/'],
        metadata: {},
        created_by: 'app',
        created_at: '2030-01-01T00:00:00.000Z',
      },
    }))
    await store.write({ ops })
    let running = true
    const tick = () => {
      if (!running) return
      events.push('tick')
      setImmediate(tick)
    }
    // Six patterns: each head costs 13 units (1, and 2 a pattern), a yield every 64 units.
    const query = 'type:w AND id:*q*q* AND id:*z*z* AND id:*x*x* AND id:*j*j* AND id:*k*k* AND id:*v*v*'
    const started = events.length
    setImmediate(tick)
    const page = await client.tokens.searchV2({ query, size: 5 })
    running = false
    expect(page.data).toEqual([])
    const walk = events.slice(started)
    const reads = walk.flatMap((e, i) => (e.startsWith('heads:') ? [i] : []))
    expect(reads.length).toBeGreaterThanOrEqual(2)
    // The first batch's ids (the page's 5 and one more: 78 units) were found without a yield ...
    expect(walk[reads[0]!]).toBe('heads:6')
    expect(walk.slice(0, reads[0]).filter((e) => e === 'tick')).toEqual([])
    // ... and its heads matched with a yield between them, before the next batch was read.
    expect(walk.slice(reads[0]! + 1, reads[1]).filter((e) => e === 'tick').length).toBeGreaterThanOrEqual(1)
  })
})
