import { memoryStore } from '../adapters/memory/index.js'
import { createService, manualClock } from '../entry/index.js'
import type { StoredToken } from '../src/kernel/types.js'
import type { Op } from '../src/store/index.js'
import { type BenchOptions, type BenchRow, opsPerSec } from './harness.js'

const GOAL = 'flat: ≤ 1.5× smallest'

const tokenRecord = (tenantId: string, id: string): StoredToken => ({
  id,
  tenant_id: tenantId,
  type: 'card',
  data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2030 },
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

const gc = () => (globalThis as { gc?: () => void }).gc?.()

/** Median ops/s of each case, measured in alternating rounds so that machine noise hits every case alike. */
async function interleaved(cases: (() => unknown)[], ms: number, rounds: number): Promise<number[]> {
  for (const fn of cases) await opsPerSec(fn, ms)
  const rates: number[][] = cases.map(() => [])
  for (let r = 0; r < rounds; r++) {
    for (const [i, fn] of cases.entries()) rates[i]!.push(await opsPerSec(fn, ms))
  }
  return rates.map((xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!)
}

const fmt = (n: number) => n.toLocaleString('en-US')

/** Time per op as the store grows, and memory per stored token against its JSON size. */
export async function run(opts: BenchOptions): Promise<BenchRow[]> {
  const rows: BenchRow[] = []
  const ms = opts.quick ? 50 : 150
  const rounds = opts.quick ? 3 : 5
  const sizes = opts.quick ? [1_000, 10_000, 50_000] : [1_000, 100_000, 1_000_000]

  // One store per size, all alive at once, each with a parent of 20 children.
  let memoryNote = ''
  const worlds = []
  for (const size of sizes) {
    const w = await world()
    gc()
    const before = process.memoryUsage().heapUsed
    await fill(w.store, w.tenantId, 0, size)
    gc()
    if (size === sizes.at(-1)) {
      const perToken = (process.memoryUsage().heapUsed - before) / size
      const json = JSON.stringify(tokenRecord(w.tenantId, 't123456')).length
      memoryNote = `${Math.round(perToken)} B heap per token vs ${json} B JSON = ${(perToken / json).toFixed(2)}× (goal ≤ 3×)`
    }
    const parent = `t${size - 1}`
    for (let i = 0; i < 20; i++) await w.client.tokens.children.link(parent, `t${i}`)
    worlds.push({ ...w, size, parent })
  }
  let n = 0
  const ops = {
    // A working set of 1,000 tokens spread over the store: what the lookup costs.
    'get (1k hot tokens)': worlds.map(
      (w) => () => w.client.tokens.get(`t${Math.floor(((n++ % 1000) * w.size) / 1000)}`),
    ),
    // Uniformly random over the whole store: what the memory hierarchy adds once it no longer fits the caches.
    'get (uniform)': worlds.map((w) => () => w.client.tokens.get(`t${(n++ * 7919) % w.size}`)),
    link: worlds.map((w) => async () => {
      const child = `t${20 + ((n++ * 7919) % (w.size - 21))}`
      await w.client.tokens.children.link(w.parent, child)
      await w.client.tokens.children.unlink(w.parent, child)
    }),
    list: worlds.map((w) => () => w.client.tokens.children.list(w.parent)),
  }
  for (const [op, cases] of Object.entries(ops)) {
    const rates = await interleaved(cases, ms, rounds)
    rows.push({
      group: 'scaling: tokens in store',
      operation: `${op} at ${fmt(sizes.at(-1)!)} tokens`,
      opsPerSec: rates.at(-1)!,
      baseline: `same op at ${fmt(sizes[0]!)} tokens`,
      baselineOpsPerSec: rates[0]!,
      ratio: rates[0]! / rates.at(-1)!,
      goal: GOAL,
      note: rates.map((r, i) => `${fmt(sizes[i]!)}: ${fmt(Math.round(r))}/s`).join(', '),
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
  worlds.length = 0
  gc()

  // Children per parent: list (page of 20) and link with 10, 10k and 100k children, in one store
  // each of the same size, so that only the number of children differs.
  const childCounts = opts.quick ? [10, 1_000, 10_000] : [10, 10_000, 100_000]
  const total = childCounts.at(-1)! + 1000
  const parents = []
  for (const count of childCounts) {
    const w = await world()
    const parentId = 'parent'
    await w.store.write({ ops: [{ op: 'token.put', token: tokenRecord(w.tenantId, parentId) }] })
    await fill(w.store, w.tenantId, 0, total, (i) =>
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
    parents.push({ ...w, count, parentId })
  }
  const kidOps = {
    list: parents.map((w) => () => w.client.tokens.children.list(w.parentId)),
    link: parents.map((w) => async () => {
      const child = `t${total - 1 - (n++ % 1000)}`
      await w.client.tokens.children.link(w.parentId, child)
      await w.client.tokens.children.unlink(w.parentId, child)
    }),
  }
  for (const [op, cases] of Object.entries(kidOps)) {
    const rates = await interleaved(cases, ms, rounds)
    // A page of 20 holds only 10 children of the smallest parent: compare the cost per child listed.
    const per = (i: number) => (op === 'list' ? Math.min(20, childCounts[i]!) : 1)
    const last = childCounts.length - 1
    rows.push({
      group: 'scaling: children per parent',
      operation: `${op} with ${fmt(childCounts[last]!)} children${op === 'list' ? ' (per child listed)' : ''}`,
      opsPerSec: rates[last]! * per(last),
      baseline: `same op with ${childCounts[0]} children`,
      baselineOpsPerSec: rates[0]! * per(0),
      ratio: (rates[0]! * per(0)) / (rates[last]! * per(last)),
      goal: GOAL,
      note: rates.map((r, i) => `${fmt(childCounts[i]!)}: ${fmt(Math.round(r))} ops/s`).join(', '),
    })
  }

  // Tenants calling in turn, each a get of its own token: over 3 tenants and over 1 000, a service
  // each, so that what differs is how many tenants call (and hold entries in the journal).
  const tenantCounts = opts.quick ? [3, 300] : [3, 1_000]
  const services = []
  for (const count of tenantCounts) {
    const service = createService({ store: memoryStore(), clock: manualClock(), runner: null })
    const callers: (() => Promise<unknown>)[] = []
    for (let t = 0; t < count; t++) {
      const tenant = await service.admin.createTenant({ name: `t${t}` })
      const { key } = await service.admin.createApplication({
        tenantId: tenant.id,
        name: 'srv',
        type: 'private',
        permissions: ['token:create', 'token:read'],
      })
      const client = service.connect(key)
      const { id } = await client.tokens.create({ type: 'token', data: `t${t}` })
      callers.push(() => client.tokens.get(id))
    }
    services.push({ count, callers, service })
  }
  let turn = 0
  const tenantRates = await interleaved(
    services.map((s) => () => s.callers[turn++ % s.count]!()),
    ms,
    rounds,
  )
  rows.push({
    group: 'scaling: tenants calling',
    operation: `get, ${fmt(tenantCounts[1]!)} tenants calling in turn`,
    opsPerSec: tenantRates[1]!,
    baseline: `the same with ${tenantCounts[0]} tenants`,
    baselineOpsPerSec: tenantRates[0]!,
    ratio: tenantRates[0]! / tenantRates[1]!,
    goal: GOAL,
    note: tenantRates.map((r, i) => `${fmt(tenantCounts[i]!)}: ${fmt(Math.round(r))}/s`).join(', '),
  })
  for (const s of services) await s.service.close()
  return rows
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import('./report.js')
  printRows(await run({ quick: process.env.BENCH_QUICK === '1' }))
}
