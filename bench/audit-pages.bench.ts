/**
 * A page of `GET /logs` costs what it answers, not the log: the same page (newest 20, then the next
 * by its cursor, then 20 of one token by entity filter) on a tenant holding 1 000 entries and on
 * one holding SIZE entries (default 250 000: 1 000 000 takes minutes to seed on a busy machine), in the same run and the same store, rounds
 * alternating. Entries are seeded straight through the store's write (`log.put` ops, 5 000 a write:
 * the page reads never check MACs). Prints pages per second at each size and the ratio big/small
 * (the goal: the page at SIZE costs at most 1.5× the page at 1 000, i.e. ratio >= 0.67).
 *
 * Run: `node --import tsx bench/audit-pages.bench.ts` (file store, durability `none` while seeding
 * is not what is measured; AUDIT_PAGES_STORES=memory,file,postgres — PostgreSQL when
 * TOKENVAULT_PG_URL is set, e.g. `eval "$(scripts/pg-test-server.sh start)"`, in a schema of its
 * own; AUDIT_PAGES_SIZE=1000000 for the goal's figure, which seeds for minutes).
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileStore } from '../adapters/file/index.js'
import { memoryStore } from '../adapters/memory/index.js'
import { createService, manualClock } from '../entry/index.js'
import type { LogEntry } from '../src/kernel/types.js'
import type { Store } from '../src/store/contract.js'

const SIZE = Number(process.env['AUDIT_PAGES_SIZE'] ?? 250_000)
const MS = Number(process.env['TOKENVAULT_BENCH_MS'] ?? 300)
const ROUNDS = 3
const PG_URL = process.env['TOKENVAULT_PG_URL']
const STORES = (process.env['AUDIT_PAGES_STORES'] ?? `file,memory${PG_URL ? ',postgres' : ''}`).split(',')
const BATCH = 5000

/** `n` entries of `tenantId` on one lane, a millisecond apart, about 64 tokens (so a filter has hits). */
async function seed(store: Store, tenantId: string, n: number): Promise<void> {
  const start = Date.parse('2029-01-01T00:00:00.000Z')
  for (let from = 0; from < n; from += BATCH) {
    const ops = []
    for (let seq = from; seq < Math.min(n, from + BATCH); seq++) {
      const entry: LogEntry = {
        tenant_id: tenantId,
        id: `bench.000000:${String(seq).padStart(12, '0')}`,
        actor_id: 'app',
        actor_type: 'application',
        entity_type: 'token',
        entity_id: `tok-${seq % 64}`,
        operation: 'read',
        message: 'token.get: answered masked',
        outcome: 'success',
        created_at: new Date(start + seq).toISOString(),
        lane: 'bench.000000',
        seq,
        mac: 'x'.repeat(43),
      }
      ops.push({ op: 'log.put' as const, entry })
    }
    await store.write({ ops })
  }
}

/** Pages per second of `page` over MS ms. */
async function rate(page: () => Promise<unknown>): Promise<number> {
  let n = 0
  const start = performance.now()
  while (performance.now() - start < MS) {
    await page()
    n++
  }
  return n / ((performance.now() - start) / 1000)
}

/** The store of `kind`: a file store in a temporary directory `dir`, PostgreSQL in a schema of its own, or memory. */
async function open(kind: string, dir: string): Promise<Store> {
  if (kind === 'file') return fileStore({ path: dir, durability: 'none' })
  if (kind !== 'postgres') return memoryStore()
  if (!PG_URL) throw new Error('AUDIT_PAGES_STORES names postgres: set TOKENVAULT_PG_URL')
  const { postgresStore } = await import('../adapters/postgres/index.js')
  return postgresStore({ connectionString: PG_URL, schema: `bench_pages_${Date.now()}` })
}

async function measure(kind: string): Promise<string> {
  const dir = kind === 'file' ? mkdtempSync(join(tmpdir(), 'tv-audit-pages-')) : ''
  const store = await open(kind, dir)
  const service = createService({ store, clock: manualClock(), masterKey: randomBytes(32), runner: null })
  const reader = async (name: string, n: number) => {
    const tenant = await service.admin.createTenant({ name })
    const { key } = await service.admin.createApplication({
      tenantId: tenant.id,
      name,
      type: 'management',
      permissions: ['log:read'],
    })
    const started = performance.now()
    await seed(store, tenant.id, n)
    const seeded = performance.now() - started
    const logs = service.connect(key).logs
    return {
      seeded,
      page: async () => {
        const first = await logs.list({ size: 20 })
        await logs.list({ size: 20, start: first.pagination.next! })
        await logs.list({ size: 20, entity_type: 'token', entity_id: 'tok-7' })
      },
    }
  }
  const small = await reader('small', 1000)
  const big = await reader('big', SIZE)
  await rate(small.page)
  await rate(big.page)
  const smalls: number[] = []
  const bigs: number[] = []
  for (let r = 0; r < ROUNDS; r++) {
    smalls.push(await rate(small.page))
    bigs.push(await rate(big.page))
  }
  await service.close()
  if (dir) rmSync(dir, { recursive: true, force: true })
  const ratios = bigs.map((b, r) => b / smalls[r]!)
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
  const f = (x: number) => x.toFixed(2)
  return `| ${kind} | ${SIZE} | ${(big.seeded / 1000).toFixed(1)} s | ${med(smalls).toFixed(0)} | ${med(bigs).toFixed(0)} | ${f(med(ratios))} (${f(Math.min(...ratios))}–${f(Math.max(...ratios))}) |`
}

console.log('| store | entries | seeding | 3 pages/s at 1 000 | 3 pages/s at SIZE | ratio (range) |')
console.log('| --- | --- | --- | --- | --- | --- |')
for (const kind of STORES) console.log(await measure(kind))
