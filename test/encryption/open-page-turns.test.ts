/**
 * A page of large tokens opens in bounded steps (256 KiB of sealed bytes a step), with a turn of
 * the event loop (`setImmediate`) between two, so another tenant's request runs between the steps
 * of a list of 900 KB tokens instead of waiting behind all of them (`npm run bench:attacks`, attack (b)).
 */
import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { memoryStore } from '../../adapters/memory/index.js'
import { createService, manualClock } from '../../entry/index.js'
import { openInSteps } from '../../src/encryption/open-in-steps.js'

/** What ran, in order: each item opened (its name) and each turn other work got ('turn'). */
async function stepsOf(sizes: number[]): Promise<string[]> {
  const log: string[] = []
  let running = true
  const tick = () => {
    log.push('turn')
    if (running) setImmediate(tick)
  }
  setImmediate(tick)
  // The first turn is taken before opening starts, so only turns between opens are counted after it.
  await new Promise<void>((resolve) => setImmediate(resolve))
  log.length = 0
  const items = sizes.map((size, i) => ({ name: `#${i}`, size }))
  await openInSteps(
    items,
    (item) => item.size,
    (item) => {
      log.push(item.name)
      return item
    },
  )
  running = false
  return log
}

async function client() {
  const service = createService({
    store: memoryStore(),
    clock: manualClock('2030-01-01T00:00:00Z'),
    runner: null,
    masterKey: randomBytes(32),
    auditLog: false,
  })
  const tenant = await service.admin.createTenant({ name: 't' })
  const permissions = ['token:create' as const, 'token:read' as const]
  const rules = [
    { description: 'all', priority: 1, container: '/', transform: 'reveal' as const, permissions },
  ]
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'app',
    type: 'private',
    permissions,
    rules,
  })
  return service.connect(key)
}

/** How many turns of the event loop other work got while `run` ran. */
async function turnsDuring(run: () => Promise<unknown>): Promise<number> {
  let turns = 0
  let running = true
  const tick = () => {
    turns++
    if (running) setImmediate(tick)
  }
  setImmediate(tick)
  await run()
  running = false
  return turns
}

describe('a page opens in steps of at most 256 KiB of sealed bytes', () => {
  it('262 144 bytes open in one step; one byte more takes a turn before the item past the bound', async () => {
    expect(await stepsOf([131_072, 131_072])).toEqual(['#0', '#1'])
    expect(await stepsOf([131_072, 131_073])).toEqual(['#0', 'turn', '#1'])
  })

  it('an item counts as 16 384 bytes at the least: 16 small items open in one step, the 17th after a turn', async () => {
    const names = (n: number) => Array.from({ length: n }, (_, i) => `#${i}`)
    expect(await stepsOf(Array(16).fill(100))).toEqual(names(16))
    expect(await stepsOf(Array(17).fill(100))).toEqual([...names(16), 'turn', '#16'])
    // 16 384 counts as itself, 16 385 a little more: two of 131 072 and one of each fill a step.
    expect(await stepsOf([131_072, 114_688, 16_384])).toEqual(['#0', '#1', '#2'])
    expect(await stepsOf([131_072, 114_688, 16_385])).toEqual(['#0', '#1', 'turn', '#2'])
  })

  it('an item larger than a step opens in a step of its own; the first never waits', async () => {
    expect(await stepsOf([300_000, 10, 300_000])).toEqual(['#0', 'turn', '#1', 'turn', '#2'])
    expect(await stepsOf([])).toEqual([])
  })

  it('a list of 300 KB tokens gives other work turns while it opens; every token reads back whole', async () => {
    const c = await client()
    const big = 'z'.repeat(300_000)
    for (let i = 0; i < 3; i++) await c.tokens.create({ type: 'big', data: `${i}${big}` })
    for (let i = 0; i < 3; i++) await c.tokens.create({ type: 'small', data: `${i}` })
    let page: { data: { data?: unknown; type?: string }[] } = { data: [] }
    const large = await turnsDuring(async () => {
      page = (await c.tokens.list({ type: 'big' } as never)) as typeof page
    })
    const small = await turnsDuring(() => c.tokens.list({ type: 'small' } as never))
    expect(large).toBeGreaterThanOrEqual(small + 2)
    expect(page.data.map((t) => t.data).sort()).toEqual([0, 1, 2].map((i) => `${i}${big}`))
  })

  it('a token larger than a step opens in steps of its own in a page: decoded, decrypted, its text, its parse', async () => {
    const c = await client()
    const data = 'q'.repeat(1_000_000)
    await c.tokens.create({ type: 'huge', data })
    let page: { data: { data?: unknown }[] } = { data: [] }
    const turns = await turnsDuring(async () => {
      page = (await c.tokens.list({ type: 'huge' } as never)) as typeof page
    })
    // Its 1 MB decrypted 256 KiB a step (3 turns between 4 steps; a store that keeps base64 decodes
    // it in steps first), then its text and its parse, a turn each; opened in one step, none.
    expect(turns).toBeGreaterThanOrEqual(8)
    expect(page.data.map((t) => t.data)).toEqual([data])
  })
})
