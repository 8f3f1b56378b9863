import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileStore } from '../adapters/file/index.js'
import { memoryStore } from '../adapters/memory/index.js'
import { localMasterKey } from '../src/encryption/keyring.js'
import { Keyring, sealedStore } from '../src/encryption/sealed-store.js'
import type { StoredToken } from '../src/kernel/types.js'
import type { Store } from '../src/store/contract.js'
import { withoutExpiredCvc } from '../src/tokens/card-cvc.js'
import { type BenchOptions, type BenchRow, inFlight } from './harness.js'

const TENANT = 'bench-tenant'

/** A card token as a tenant stores one: number, expiry, cvc, and a mask. */
const card = (id: string): StoredToken => ({
  id,
  tenant_id: TENANT,
  type: 'card',
  data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2030, cvc: '123' },
  mask: { number: 'XXXXXXXXXXXX4242', expiration_month: 12, expiration_year: 2030 },
  containers: ['/pci/high/'],
  metadata: { customer: 'c-123' },
  created_by: 'app',
  created_at: '2030-01-01T00:00:00.000Z',
})

/** `store` encrypting through the core's sealed store, with the tenant's data key made. */
async function sealed(store: Store): Promise<Store> {
  const keyring = new Keyring(store, [localMasterKey(randomBytes(32))])
  const tenant = { id: TENANT, name: 'bench', created_at: '2030-01-01T00:00:00.000Z' }
  await store.write({
    ops: [{ op: 'tenant.put', tenant: { ...tenant, data_key: await keyring.newTenantKey(TENANT) } }],
  })
  return sealedStore(store, keyring, {
    searchIndexPurpose: 'search-index',
    asRead: (token) =>
      token.cvc_expires_at === undefined ? token : withoutExpiredCvc(token, new Date().toISOString()),
  })
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/** Alternating rounds of `ours` and `plain` at `concurrency`; medians of each. */
async function rounds(
  ours: () => Promise<unknown>,
  plain: () => Promise<unknown>,
  concurrency: number,
  total: number,
  n: number,
): Promise<{ op: number; baseline: number }> {
  const a: number[] = []
  const b: number[] = []
  for (let i = 0; i < n; i++) {
    a.push(await inFlight(ours, concurrency, total))
    b.push(await inFlight(plain, concurrency, total))
  }
  return { op: median(a), baseline: median(b) }
}

const row = (operation: string, r: { op: number; baseline: number }, goal: string): BenchRow => ({
  group: 'encryption',
  operation,
  opsPerSec: r.op,
  baseline: 'the same store without encryption',
  baselineOpsPerSec: r.baseline,
  ratio: r.baseline / r.op,
  goal,
  note: `${((r.baseline / r.op - 1) * 100).toFixed(1)} % slower`,
})

/**
 * The cost of encryption at rest: the same store through the core's sealed store (AES-256-GCM of
 * `data` and `mask` on the way in, and out) against the store alone, in alternating rounds of one
 * run: durable creates on the file store at 1 and 64 writers, gets on the memory store, and
 * PostgreSQL creates and gets when `TOKENVAULT_PG_URL` is set.
 */
export async function run(opts: BenchOptions): Promise<BenchRow[]> {
  const rows: BenchRow[] = []
  const n = opts.quick ? 3 : 7

  const memory = memoryStore()
  const memorySealed = await sealed(memoryStore())
  for (let i = 0; i < 1000; i++) {
    await memory.write({ ops: [{ op: 'token.put', token: card(`m${i}`) }] })
    await memorySealed.write({ ops: [{ op: 'token.put', token: card(`m${i}`) }] })
  }
  let g = 0
  const get = (s: Store) => () => s.getToken(TENANT, `m${g++ % 1000}`)
  rows.push(
    row(
      'memory store get',
      await rounds(get(memorySealed), get(memory), 1, opts.quick ? 20_000 : 100_000, n),
      '≤ 20 %',
    ),
  )

  const dir = await mkdtemp(join(tmpdir(), 'tokenvault-bench-enc-'))
  try {
    const plainFile = await fileStore({ path: join(dir, 'plain') })
    const sealedFile = await sealed(await fileStore({ path: join(dir, 'sealed') }))
    let c = 0
    const create = (s: Store) => () => s.write({ ops: [{ op: 'token.put', token: card(`f${c++}`) }] })
    for (const writers of [1, 64]) {
      const total = (opts.quick ? 300 : 2000) * (writers === 1 ? 1 : 8)
      const r = await rounds(create(sealedFile), create(plainFile), writers, total, n)
      rows.push(row(`file store durable create, ${writers} writer${writers === 1 ? '' : 's'}`, r, '≤ 15 %'))
    }
    await plainFile.close()
    await sealedFile.close()
  } finally {
    await rm(dir, { recursive: true, force: true })
  }

  const url = process.env['TOKENVAULT_PG_URL']
  if (url) {
    const { postgresStore } = await import('../adapters/postgres/index.js')
    const schemas = [
      `tv_bench_${randomBytes(4).toString('hex')}`,
      `tv_bench_${randomBytes(4).toString('hex')}`,
    ]
    const plainPg = await postgresStore({ connectionString: url, schema: schemas[0]! })
    const sealedPg = await sealed(await postgresStore({ connectionString: url, schema: schemas[1]! }))
    try {
      let p = 0
      const create = (s: Store) => () => s.write({ ops: [{ op: 'token.put', token: card(`p${p++}`) }] })
      const total = opts.quick ? 300 : 2000
      rows.push(
        row(
          'PostgreSQL create, 10 in flight',
          await rounds(create(sealedPg), create(plainPg), 10, total, n),
          '≤ 15 %',
        ),
      )
      let q = 0
      const get = (s: Store) => () => s.getToken(TENANT, `p${q++ % 200}`)
      rows.push(
        row(
          'PostgreSQL get, 10 in flight',
          await rounds(get(sealedPg), get(plainPg), 10, total * 2, n),
          '≤ 20 %',
        ),
      )
    } finally {
      await plainPg.close()
      await sealedPg.close()
      const pg = await import('pg')
      const pool = new pg.default.Pool({ connectionString: url, max: 1 })
      for (const schema of schemas) await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
      await pool.end()
    }
  }
  return rows
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { printRows } = await import('./report.js')
  printRows(await run({ quick: process.env.BENCH_QUICK === '1' }))
}
