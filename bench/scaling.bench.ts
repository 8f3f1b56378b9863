import { memoryStore } from '../adapters/memory/index.js'
import { createService, manualClock } from '../src/index.js'
import type { Op, StoredToken } from '../src/types.js'
import { type BenchOptions, type BenchRow, opsPerSec } from './harness.js'

const GOAL = 'flat: ≤ 1.5× smallest'

const tokenRecord = (tenantId: string, id: string): StoredToken => ({
  id,
  tenant_id: tenantId,
  type: 'card',
  data: { number: '4242424242424242', exp: '12/30' },
  containers: ['/general/high/'],
  metadata: { owner: 'ann' },
  created_by: 'bench',
  created_at: '2030-01-01T00:00:00.000Z',
})

async function world() {
  const store = memoryStore()
  const service = createService({ store, clock: manualClock() })
  const tenant = await service.admin.createTenant({ name: 'bench' })
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'srv',
    type: 'private',
    permissions: ['token:create', 'token:read', 'token:delete'],
  })
  return { store, client: service.connect(key), tenantId: tenant.id }
}

/** Fills the store with `count` tokens (ids t0…), in batches written straight to the store. */
async function fill(
  store: ReturnType<typeof memoryStore>,
  tenantId: string,
  from: number,
  to: number,
  ops?: (i: number) => Op[],
) {
  for (let start = from; start < to; start += 10_000) {
    const batch: Op[] = []
    for (let i = start; i < Math.min(to, start + 10_000); i++) {
      batch.push({ op: 'token.put', token: tokenRecord(tenantId, `t${i}`) }, ...(ops?.(i) ?? []))
    }
    await store.write({ ops: batch })
  }
}

/** ops/s of `fn` after a warm-up of the same length, so the first size measured is not a cold start. */
async function warmRate(fn: () => unknown, ms: number): Promise<number> {
  await opsPerSec(fn, ms)
  return opsPerSec(fn, ms)
}

const gc = () => (globalThis as { gc?: () => void }).gc?.()

/** Time per op as the store grows, and memory per stored token against its JSON size. */
export async function run(opts: BenchOptions): Promise<BenchRow[]> {
  const rows: BenchRow[] = []
  const ms = opts.quick ? 100 : 400
  const sizes = opts.quick ? [1_000, 10_000, 50_000] : [1_000, 100_000, 1_000_000]
  const { store, client, tenantId } = await world()
  let filled = 0
  const perSize: Record<string, number[]> = { get: [], link: [], list: [] }
  let memoryNote = ''
  for (const size of sizes) {
    gc()
    const before = process.memoryUsage().heapUsed
    await fill(store, tenantId, filled, size)
    gc()
    const perToken = (process.memoryUsage().heapUsed - before) / (size - filled)
    filled = size
    if (size === sizes.at(-1)) {
      const json = JSON.stringify(tokenRecord(tenantId, 't123456')).length
      memoryNote = `${Math.round(perToken)} B heap per token vs ${json} B JSON = ${(perToken / json).toFixed(2)}× (goal ≤ 3×)`
    }
    // A parent with 20 children for list; link + unlink of random pairs.
    const parent = `t${size - 1}`
    for (let i = 0; i < 20; i++) await client.tokens.children.link(parent, `t${i}`)
    let n = 0
    perSize.get!.push(await warmRate(() => client.tokens.get(`t${(n++ * 7919) % size}`), ms))
    perSize.link!.push(
      await opsPerSec(async () => {
        const child = `t${20 + ((n++ * 7919) % (size - 21))}`
        await client.tokens.children.link(parent, child)
        await client.tokens.children.unlink(parent, child)
      }, ms),
    )
    perSize.list!.push(await warmRate(() => client.tokens.children.list(parent), ms))
  }
  for (const [op, rates] of Object.entries(perSize)) {
    const small = rates[0]!
    const large = rates.at(-1)!
    rows.push({
      group: 'scaling: tokens in store',
      operation: `${op} at ${sizes.at(-1)!.toLocaleString('en-US')} tokens`,
      opsPerSec: large,
      baseline: `same op at ${sizes[0]!.toLocaleString('en-US')} tokens`,
      baselineOpsPerSec: small,
      ratio: small / large,
      goal: GOAL,
      note: rates
        .map((r, i) => `${sizes[i]!.toLocaleString('en-US')}: ${Math.round(r).toLocaleString('en-US')}/s`)
        .join(', '),
    })
  }
  rows.push({
    group: 'scaling: memory',
    operation: 'heap per stored token',
    opsPerSec: 0,
    baseline: 'its JSON size',
    baselineOpsPerSec: 0,
    ratio: Number(memoryNote.match(/= ([\d.]+)×/)?.[1] ?? Number.NaN),
    goal: '≤ 3×',
    note: memoryNote,
  })

  // Children per parent: list (page of 20) and link with 10, 10k and 100k children.
  const childCounts = opts.quick ? [10, 1_000, 10_000] : [10, 10_000, 100_000]
  const kids: Record<string, number[]> = { list: [], link: [] }
  for (const count of childCounts) {
    const w = await world()
    const parentId = 'parent'
    await w.store.write({ ops: [{ op: 'token.put', token: tokenRecord(w.tenantId, parentId) }] })
    await fill(w.store, w.tenantId, 0, count + 1000, (i) =>
      i < count
        ? [
            {
              op: 'association.put',
              association: {
                tenant_id: w.tenantId,
                parent_id: parentId,
                child_id: `t${i}`,
                created_at: '2030-01-01T00:00:00.000Z',
              },
            },
          ]
        : [],
    )
    let n = 0
    kids.list!.push(await warmRate(() => w.client.tokens.children.list(parentId), ms))
    kids.link!.push(
      await opsPerSec(async () => {
        const child = `t${count + (n++ % 1000)}`
        await w.client.tokens.children.link(parentId, child)
        await w.client.tokens.children.unlink(parentId, child)
      }, ms),
    )
  }
  for (const [op, rates] of Object.entries(kids)) {
    // A page of 20 holds only 10 children of the smallest parent: compare the cost per child listed.
    const perItem = (i: number) => (op === 'list' ? Math.min(20, childCounts[i]!) : 1)
    rows.push({
      group: 'scaling: children per parent',
      operation: `${op} with ${childCounts.at(-1)!.toLocaleString('en-US')} children${op === 'list' ? ' (per child listed)' : ''}`,
      opsPerSec: rates.at(-1)! * perItem(childCounts.length - 1),
      baseline: `same op with ${childCounts[0]} children`,
      baselineOpsPerSec: rates[0]! * perItem(0),
      ratio: (rates[0]! * perItem(0)) / (rates.at(-1)! * perItem(childCounts.length - 1)),
      goal: GOAL,
      note: rates
        .map(
          (r, i) => `${childCounts[i]!.toLocaleString('en-US')}: ${Math.round(r).toLocaleString('en-US')}/s`,
        )
        .join(', '),
    })
  }
  return rows
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import('./report.js')
  printRows(await run({ quick: process.env.BENCH_QUICK === '1' }))
}
