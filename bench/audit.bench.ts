/**
 * The audit log's cost: token create and get with the log on against the same calls with it off
 * (`auditLog: false`), in the same run, in process, at 1 and 64 calls in flight, on the memory
 * store, the file store (LMDB, synchronous commits) and PostgreSQL (when TOKENVAULT_PG_URL is set).
 * Prints calls per second for each and the ratio on/off (the goal: >= 0.8 at 64 in flight).
 *
 * Run: `npm run bench:audit` (about 2 s per measured cell; TOKENVAULT_BENCH_MS sets it).
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileStore } from '../adapters/file/index.js'
import { memoryStore } from '../adapters/memory/index.js'
import { postgresStore } from '../adapters/postgres/index.js'
import { createService, systemClock } from '../entry/index.js'
import type { Store } from '../src/store/contract.js'

const MS = Number(process.env['TOKENVAULT_BENCH_MS'] ?? 2000)
const masterKey = randomBytes(32)

type Kind = 'memory' | 'file' | 'postgres'

async function openStore(kind: Kind): Promise<{ store: Store; done(): Promise<void> }> {
  if (kind === 'memory') return { store: memoryStore(), done: async () => {} }
  if (kind === 'file') {
    const dir = mkdtempSync(join(tmpdir(), 'tv-audit-bench-'))
    return {
      store: await fileStore({ path: dir }),
      done: async () => rmSync(dir, { recursive: true, force: true }),
    }
  }
  const schema = `tv_bench_${randomBytes(4).toString('hex')}`
  return {
    store: await postgresStore({ connectionString: process.env['TOKENVAULT_PG_URL']!, schema }),
    done: async () => {},
  }
}

/** Calls per second of `call` kept `inFlight` at a time for MS milliseconds. */
async function rate(inFlight: number, call: () => Promise<unknown>): Promise<number> {
  let n = 0
  const end = performance.now() + MS
  const start = performance.now()
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (performance.now() < end) {
        await call()
        n++
      }
    }),
  )
  return n / ((performance.now() - start) / 1000)
}

async function measure(kind: Kind, auditLog: boolean, inFlight: number) {
  const { store, done } = await openStore(kind)
  const service = createService({ store, clock: systemClock, masterKey, runner: null, auditLog })
  const tenant = await service.admin.createTenant({ name: 'bench' })
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'bench',
    type: 'private',
    permissions: ['token:create', 'token:read'],
  })
  const client = service.connect(key)
  const ids = await Promise.all(
    Array.from({ length: 64 }, (_, i) => client.tokens.create({ type: 'token', data: `v${i}` })),
  )
  let i = 0
  const create = await rate(inFlight, () => client.tokens.create({ type: 'token', data: 'x' }))
  const get = await rate(inFlight, () => client.tokens.get(ids[i++ % ids.length]!.id))
  await service.close()
  await done()
  return { create, get }
}

const kinds: Kind[] = ['memory', 'file', ...(process.env['TOKENVAULT_PG_URL'] ? (['postgres'] as const) : [])]
console.log('| store | in flight | create off/s | create on/s | ratio | get off/s | get on/s | ratio |')
console.log('| --- | --- | --- | --- | --- | --- | --- | --- |')
for (const kind of kinds) {
  for (const inFlight of [1, 64]) {
    const off = await measure(kind, false, inFlight)
    const on = await measure(kind, true, inFlight)
    const f = (x: number) => x.toFixed(0)
    console.log(
      `| ${kind} | ${inFlight} | ${f(off.create)} | ${f(on.create)} | ${(on.create / off.create).toFixed(2)} | ${f(off.get)} | ${f(on.get)} | ${(on.get / off.get).toFixed(2)} |`,
    )
  }
}
