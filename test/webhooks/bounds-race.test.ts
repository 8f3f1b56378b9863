/**
 * The per-tenant webhook bound (5, the reference's) is a guard of the create's own store write
 * (`count.within`), not a read before it: 8 creates started at once on an empty tenant make exactly
 * 5 webhooks and 3 answers of 429, on the memory store and the file store.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { fileStore } from '../../adapters/file/index.js'
import { memoryStore } from '../../adapters/memory/index.js'
import type { Store } from '../../src/store/index.js'
import { createTestVault } from '../../testing/index.js'

const RECEIVER = 'https://hooks.example.test'

async function raceOn(store: Store) {
  const v = await createTestVault({ store, destinations: { [RECEIVER]: () => new Response(null) } })
  const hooks = v.client('management').webhooks
  const body = (i: number) => ({ name: `h${i}`, url: `${RECEIVER}/in`, events: ['token.created'] })
  const outcomes = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => hooks.create(body(i))))
  const refused = outcomes
    .filter((o) => o.status === 'rejected')
    .map((o) => (o as PromiseRejectedResult).reason)
  expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(5)
  expect(refused.map((e) => e.code)).toEqual(['too_many_requests', 'too_many_requests', 'too_many_requests'])
  expect((await hooks.list()).pagination.total_items).toBe(5)
  await v.close()
}

describe('the webhook bound under concurrent creates', () => {
  it('memory store: 8 concurrent creates make 5 webhooks, 3 are 429', async () => {
    await raceOn(memoryStore())
  })

  it('file store: 8 concurrent creates make 5 webhooks, 3 are 429', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tv-hook-bound-'))
    await raceOn(await fileStore({ path: join(dir, 'store') }))
  }, 60_000)
})
