/**
 * The per-tenant pending-deliveries bound (`maxPendingDeliveriesPerTenant`) for webhook events is a
 * guard of the event's own store write (`count.within`), not a read before it: 5 token creates started
 * at once, each making one delivery, at a bound of 3 make exactly 3 tokens and 3 deliveries, and 2
 * answers of 429 that write nothing, on the memory store and the file store (PostgreSQL:
 * test/postgres/webhook-pending-bound.test.ts).
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import { expectBoundKept, raceCreates } from './pending-bound.js'

describe('the pending-deliveries bound of webhook events under concurrent writes', () => {
  it('memory store: maxPendingDeliveriesPerTenant 3, 5 concurrent creates — 3 made, 2 are 429', async () => {
    expectBoundKept(await raceCreates(memoryStore()))
  })

  it('file store: maxPendingDeliveriesPerTenant 3, 5 concurrent creates — 3 made, 2 are 429', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tv-pending-bound-'))
    expectBoundKept(await raceCreates(await fileStore({ path: join(dir, 'store') })))
  }, 60_000)
})
