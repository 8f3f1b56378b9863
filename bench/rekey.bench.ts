/**
 * The re-encryption sweep: its rate (records re-sealed per second) at BENCH_TOKENS tokens (default
 * 100 000) of one tenant, and what it costs another tenant: the p99 of that tenant's token get
 * while the sweep runs against the p99 of the same gets without it, measured in the same run
 * (goal: ≤ 2×). Stores: BENCH_STORE=memory|file|postgres (postgres needs TOKENVAULT_PG_URL).
 * The tokens are sealed and written in batches of 1000 straight to the store (as the service would
 * store them), then the key rotates and `admin.reencrypt` runs with batches of BENCH_BATCH (500).
 * The gets without the sweep are 3 s before it and 3 s after it, their p99 taken over both.
 * With BENCH_PHASES=1 it also prints where the other tenant's gets spend their time, without the
 * sweep and during it (median / p99 of each phase: until the call begins, the call to its token
 * read, the read to its audit entry's write, that write, the rest), and during the sweep the
 * process's CPU time, the event loop's longest block and the garbage collections.
 * Run: `npm run bench:rekey` (BENCH_STORE=file npm run bench:rekey, …).
 */
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { monitorEventLoopDelay, PerformanceObserver } from 'node:perf_hooks'
import { fileStore } from '../adapters/file/index.js'
import { memoryStore } from '../adapters/memory/index.js'
import { postgresStore } from '../adapters/postgres/index.js'
import { createService, systemClock } from '../entry/index.js'
import { Keyring } from '../src/encryption/index.js'
import { sealToken } from '../src/encryption/sealing.js'
import type { StoredToken } from '../src/kernel/types.js'
import type { Store } from '../src/store/contract.js'
import { delegatingStore, type Op } from '../src/store/index.js'

const TOKENS = Number(process.env['BENCH_TOKENS'] ?? 100_000)
const BATCH = Number(process.env['BENCH_BATCH'] ?? 500)
/** The sweep's share of the time while calls come (`reencrypt`'s `share`); absent: the service's default. */
const SHARE = process.env['BENCH_SHARE'] === undefined ? undefined : Number(process.env['BENCH_SHARE'])
const KIND = process.env['BENCH_STORE'] ?? 'memory'
const PHASES = process.env['BENCH_PHASES'] === '1'

/** BENCH_PHASES: when the other tenant's current get read its token and wrote its audit entry. */
const stamps = { tenant: '', read: 0, logWrite: 0, logDone: 0 }
/** Each get's phases (ms): until the call, call → token read, read → log write, log write, the rest. */
const phases: number[][] = []

/** `inner` with the other tenant's token reads and audit writes stamped (BENCH_PHASES). */
function stamped(inner: Store): Store {
  const ofOther = (op: Op) => op.op === 'log.put' && op.entry.tenant_id === stamps.tenant
  return delegatingStore(inner, {
    getToken(tenantId, id) {
      if (tenantId === stamps.tenant) stamps.read = performance.now()
      return inner.getToken(tenantId, id)
    },
    async write(batch) {
      const log = batch.ops.some(ofOther)
      if (log) stamps.logWrite = performance.now()
      const result = await inner.write(batch)
      if (log) stamps.logDone = performance.now()
      return result
    },
  })
}

/** The median and p99 of each phase of the gets since the last call, and forgets them. */
function phaseLine(label: string): string {
  const at = (k: number) => {
    const xs = phases.map((p) => p[k]!).sort((a, b) => a - b)
    return `${xs[xs.length >> 1]!.toFixed(3)}/${xs[Math.floor(xs.length * 0.99)]!.toFixed(3)}`
  }
  const line = `${KIND}: ${label} phases median/p99 ms: until the call ${at(0)}, to its read ${at(1)}, to its log write ${at(2)}, the log write ${at(3)}, the rest ${at(4)} (${phases.length} gets)\n`
  phases.length = 0
  return line
}

/** CPU time, the event loop's longest block and the collections from now until the answer is called. */
function watchLoad(): () => string {
  const cpu = process.cpuUsage()
  const delay = monitorEventLoopDelay({ resolution: 1 })
  delay.enable()
  const pauses: number[] = []
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) pauses.push(e.duration)
  })
  observer.observe({ entryTypes: ['gc'] })
  return () => {
    delay.disable()
    observer.disconnect()
    const used = process.cpuUsage(cpu)
    pauses.sort((a, b) => a - b)
    const median = pauses.length ? pauses[pauses.length >> 1]!.toFixed(2) : '-'
    return `${KIND}: during the sweep CPU ${((used.user + used.system) / 1000).toFixed(0)} ms, event loop's longest block ${(delay.max / 1e6).toFixed(2)} ms, ${pauses.length} collections (median ${median} ms)\n`
  }
}

async function openStore(): Promise<{ store: () => Promise<Store>; cleanup: () => Promise<void> }> {
  if (KIND === 'memory') {
    const store = memoryStore()
    return { store: async () => store, cleanup: async () => {} }
  }
  if (KIND === 'file') {
    const dir = await mkdtemp(join(tmpdir(), 'tokenvault-rekey-bench-'))
    return { store: () => fileStore({ path: dir }), cleanup: () => rm(dir, { recursive: true, force: true }) }
  }
  const url = process.env['TOKENVAULT_PG_URL']
  if (!url) throw new Error('BENCH_STORE=postgres needs TOKENVAULT_PG_URL')
  const schema = `tv_rekey_bench_${randomBytes(4).toString('hex')}`
  return {
    store: () => postgresStore({ connectionString: url, schema }),
    cleanup: async () => {
      const { default: pg } = await import('pg')
      const pool = new pg.Pool({ connectionString: url, max: 1 })
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)
      await pool.end()
    },
  }
}

const REVEAL = {
  description: 'all',
  priority: 1,
  container: '/',
  transform: 'reveal' as const,
  permissions: ['token:create' as const, 'token:read' as const],
}

/** Writes `n` sealed tokens of `tenantId` straight to `store`, 1000 to a write (200 on PostgreSQL). */
async function fill(store: Store, masterKey: Uint8Array, tenantId: string, n: number): Promise<string[]> {
  const keyring = new Keyring(store, [(await import('../src/encryption/index.js')).toProvider(masterKey)])
  const sealing = {
    keyOf: (t: string, v?: number) => keyring.keyFor(t, v),
    sealKeyOf: (t: string) => keyring.sealKey(t),
    searchIndexPurpose: 'search-index',
    asRead: (t: StoredToken) => t,
  }
  const ids: string[] = []
  // PostgreSQL: 200 to a write (a write of 1000 puts can pass the statement timeout on a busy machine).
  const chunk = KIND === 'postgres' ? 200 : 1000
  for (let at = 0; at < n; at += chunk) {
    const ops: Op[] = []
    for (let i = at; i < Math.min(n, at + chunk); i++) {
      const id = `${String(i).padStart(8, '0')}-${randomBytes(4).toString('hex')}`
      ids.push(id)
      const token = {
        id,
        tenant_id: tenantId,
        type: 'token',
        data: { n: i, card: '4242424242424242' },
        containers: ['/general/high/'],
        metadata: {},
        created_by: 'bench',
        created_at: new Date().toISOString(),
      } as StoredToken
      ops.push({ op: 'token.put', token: await sealToken(sealing, token) })
    }
    await store.write({ ops })
  }
  return ids
}

const p99 = (samples: number[]) => {
  const sorted = [...samples].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))]!
}

/** Gets `ids` one after another until `until()` is true (at least 200 gets): each get's time (ms). */
async function probe(get: (id: string) => Promise<unknown>, ids: string[], until: () => boolean) {
  const samples: number[] = []
  for (let i = 0; samples.length < 200 || !until(); i++) {
    const started = performance.now()
    // A turn first, inside the time: on the memory store a get never leaves the microtask queue, so
    // a loop of them would starve the sweep, which works in turns (and this get waits behind one).
    await new Promise((resolve) => setImmediate(resolve))
    const called = performance.now()
    await get(ids[i % ids.length]!)
    const ended = performance.now()
    samples.push(ended - started)
    if (PHASES) {
      const { read, logWrite, logDone } = stamps
      phases.push([called - started, read - called, logWrite - read, logDone - logWrite, ended - logDone])
    }
  }
  return samples
}

async function main() {
  const opened = await openStore()
  const store = PHASES ? stamped(await opened.store()) : await opened.store()
  const masterKey = randomBytes(32)
  const service = createService({ store, clock: systemClock, runner: null, masterKey })
  try {
    const swept = await service.admin.createTenant({ name: 'swept' })
    const other = await service.admin.createTenant({ name: 'other' })
    const { key } = await service.admin.createApplication({
      tenantId: other.id,
      name: 'reader',
      type: 'private',
      permissions: ['token:create', 'token:read'],
      rules: [REVEAL],
    })
    const client = service.connect(key)
    stamps.tenant = other.id
    const otherIds: string[] = []
    for (let i = 0; i < 200; i++)
      otherIds.push((await client.tokens.create({ type: 'token', data: { i } })).id)
    const filled = performance.now()
    await fill(store, masterKey, swept.id, TOKENS)
    const fillMs = performance.now() - filled
    const get = (id: string) => client.tokens.get(id)
    // Without the sweep: 3 s of gets before it (and 3 s after it, below).
    const quietUntil = performance.now() + 3000
    phases.length = 0
    const quiet = await probe(get, otherIds, () => performance.now() > quietUntil)
    const quietPhases = PHASES ? phaseLine('without the sweep') : ''
    await service.admin.rotateDataKey({ tenantId: swept.id })
    let sweeping = true
    const started = performance.now()
    let raced = 0
    const onProgress = (p: { raced: number }) => {
      raced += p.raced
    }
    const sweep = service.admin
      .reencrypt({
        tenantId: swept.id,
        batchSize: BATCH,
        onProgress,
        ...(SHARE === undefined ? {} : { share: SHARE }),
      })
      .finally(() => {
        sweeping = false
      })
    const load = PHASES ? watchLoad() : () => ''
    const busy = await probe(get, otherIds, () => !sweeping)
    const during = PHASES ? phaseLine('during the sweep') + load() : ''
    const progress = await sweep
    const seconds = (performance.now() - started) / 1000
    // Without the sweep again, after it: a machine whose load drifts during the run moves both alike.
    const afterUntil = performance.now() + 3000
    quiet.push(...(await probe(get, otherIds, () => performance.now() > afterUntil)))
    const rate = Math.round(progress.done / seconds)
    // The sweep's window on the process's clock (what `node --trace-gc` stamps its lines with).
    process.stdout.write(
      `${KIND}: sweep from ${started.toFixed(0)} ms to ${(started + seconds * 1000).toFixed(0)} ms\n`,
    )
    const ratio = p99(busy) / p99(quiet)
    process.stdout.write(
      `${KIND}: ${progress.done} of ${TOKENS} tokens re-sealed in ${seconds.toFixed(1)} s = ${rate} records/s (batch ${BATCH}; share ${SHARE ?? 'default'}; ${raced} raced; filled in ${(fillMs / 1000).toFixed(1)} s)\n` +
        `${KIND}: other tenant's get p99 ${p99(quiet).toFixed(2)} ms without the sweep, ${p99(busy).toFixed(2)} ms during it (${busy.length} gets) = ${ratio.toFixed(2)}× (goal ≤ 2×)\n${quietPhases}${during}`,
    )
  } finally {
    await service.close()
    await opened.cleanup()
  }
}

await main()
