import { createCipheriv, createDecipheriv, randomBytes, randomUUID } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { open } from 'lmdb'
import { tokenCodec } from '../adapters/file/token-codec.js'
import type { StoredToken } from '../src/kernel/types.js'
import { built } from './built.js'
import { type BenchOptions, type BenchRow, inFlight } from './harness.js'

/**
 * The file store (LMDB) through the service against raw `lmdb`, in the same run (each row's note
 * also gives the CPU time per op of both sides, every thread of the process counted):
 * - durable creates (`tokens.create` of a ~1 KB token: authentication, validation, encryption,
 *   the guarded write with its indexes, acknowledged once its commit is on disk) at 1 / 16 / 64
 *   writers, against raw `lmdb` puts of the same stored bytes with the same sync settings, under
 *   keys made as the store's (the tenant, then a time-ordered token id);
 * - gets (`tokens.get`: authentication, access rules, the read, one decryption) against a raw
 *   `lmdb` get of the same bytes plus one AES-256-GCM decryption of the token's data.
 * Rounds alternate ours and the floor; the medians are reported.
 */

const DATA = 'x'.repeat(1000)

/**
 * The floors' token ids, shaped as the service makes them: a UUID v7 (48 bits of the current
 * millisecond, a counter that goes up within it, then random bits), so a floor's keys land in its
 * B-trees where the store's do. `BENCH_FLOOR_KEYS=random` gives the floors random UUIDs instead
 * (keys all over the tree: what the store's keys were while token ids were UUID v4).
 */
const randomKeys = process.env['BENCH_FLOOR_KEYS'] === 'random'
/**
 * `BENCH_AUDIT_LOG=off`: the services run with `auditLog: false`. With the log on (the default, as
 * a host gets it) a get at 1 in flight waits for its own entry's commit (docs/audit-log.md).
 */
const auditLogOff = process.env['BENCH_AUDIT_LOG'] === 'off'
const floorKeys = randomKeys ? 'random (v4)' : 'time-ordered (v7)'
let floorMs = -1
let floorCount = 0
const floorId = randomKeys
  ? randomUUID
  : () => {
      const now = Date.now()
      if (now > floorMs) [floorMs, floorCount] = [now, 0]
      else floorCount++
      const hex = floorMs.toString(16).padStart(12, '0')
      const count = (floorCount & 0xfff).toString(16).padStart(3, '0')
      return `${hex.slice(0, 8)}-${hex.slice(8)}-7${count}${randomUUID().slice(18)}`
    }
const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/** `inFlight`, with the CPU time (every thread of the process: user + system) it took per call, in µs. */
async function measured(
  fn: () => Promise<unknown>,
  concurrency: number,
  total: number,
): Promise<{ rate: number; cpu: number }> {
  const before = process.cpuUsage()
  const rate = await inFlight(fn, concurrency, total)
  const used = process.cpuUsage(before)
  return { rate, cpu: (used.user + used.system) / total }
}

/** Median ops/s and CPU per op over rounds that alternate ours and the floor. */
async function alternate(
  ours: () => Promise<unknown>,
  floor: () => Promise<unknown>,
  concurrency: number,
  total: number,
  rounds: number,
) {
  const a: { rate: number; cpu: number }[] = []
  const b: { rate: number; cpu: number }[] = []
  for (let r = 0; r < rounds; r++) {
    a.push(await measured(ours, concurrency, total))
    b.push(await measured(floor, concurrency, total))
  }
  const rate = (xs: { rate: number }[]) => median(xs.map((x) => x.rate))
  const cpu = (xs: { cpu: number }[]) => median(xs.map((x) => x.cpu))
  return { op: rate(a), base: rate(b), opCpu: cpu(a), baseCpu: cpu(b) }
}

const note = (r: { op: number; base: number; opCpu: number; baseCpu: number }) =>
  `${(r.op / r.base).toFixed(2)} of the floor; CPU ${r.opCpu.toFixed(0)} µs vs ${r.baseCpu.toFixed(0)} µs per op`

/** The same environment settings the store uses. */
const rawEnv = (path: string) =>
  open({
    path,
    maxDbs: 8,
    overlappingSync: false,
    eventTurnBatching: false,
    keyEncoding: 'binary',
    encoding: 'binary',
  })

/**
 * The second floor: raw `lmdb` writing what any store that answers the read contract must write
 * for one create, in one write transaction of its own (lmdb runs the transactions queued together
 * in one commit, as the store groups its writes): the token's guard read (is the id taken: a create
 * of an id the service made needs no lock guard), the token's bytes put, an index entry per term it carries (its type, its fingerprint,
 * each container) and its tenant's count read and put back one higher. No service, no encryption,
 * no validation: keys and values built inline, of the same sizes and order as the store's (token
 * ids made as the service makes them: see `floorId`).
 */
function sameRecords(path: string, tenantId: string, token: StoredToken, stored: Buffer) {
  const env = rawEnv(path)
  const tokens = env.openDB({ name: 'tokens', keyEncoding: 'binary', encoding: 'binary' })
  const terms = env.openDB({ name: 'terms', keyEncoding: 'binary', encoding: 'json' })
  const meta = env.openDB({ name: 'meta', keyEncoding: 'binary', encoding: 'json' })
  const termNames = [
    `type\u0000${token.type}`,
    `fingerprint\u0000${token.fingerprint}`,
    ...token.containers.map((c) => `container\u0000${c}`),
  ]
  const countKey = Buffer.from(`tokenCount\u0000${tenantId}`)
  const create = () => {
    const id = floorId()
    return env.transaction(() => {
      const k = Buffer.from(`${tenantId}\u0000${id}`)
      if (tokens.doesExist(k)) return false
      for (const term of termNames) terms.put(Buffer.from(`${tenantId}\u0000${term}\u0000${id}`), 1)
      meta.put(countKey, ((meta.get(countKey) as number | undefined) ?? 0) + 1)
      tokens.put(k, stored)
      return true
    })
  }
  return { create, close: () => env.close() }
}

export async function run(opts: BenchOptions): Promise<BenchRow[]> {
  const dir = await mkdtemp(join(tmpdir(), 'tokenvault-bench-file-'))
  const rows: BenchRow[] = []
  try {
    const {
      entry: { createService, systemClock },
      file: { fileStore },
      memory: { memoryStore },
    } = await built()
    /** A service on `store` with one tenant and a private application that reads in the clear. */
    const serve = async (store: Parameters<typeof createService>[0]['store']) => {
      const service = createService({
        store,
        clock: systemClock,
        masterKey: randomBytes(32),
        runner: null,
        ...(auditLogOff ? { auditLog: false } : {}),
      })
      const tenant = await service.admin.createTenant({ name: 'bench' })
      const perms = ['token:create', 'token:read'] as const
      const { key } = await service.admin.createApplication({
        tenantId: tenant.id,
        name: 'bench',
        type: 'private',
        permissions: [...perms],
        rules: [
          { description: 'all', priority: 1, container: '/', transform: 'reveal', permissions: [...perms] },
        ],
      })
      return { service, tenant, client: service.connect(key) }
    }
    const store = await fileStore({ path: join(dir, 'store') })
    const { service, tenant, client } = await serve(store)
    // The same service on the memory store: what the core costs without any store work, the
    // ceiling a file store through this service could reach against the same floor.
    const inMemory = await serve(memoryStore())
    const first = await client.tokens.create({ type: 'token', data: DATA })
    // The bytes the store keeps for that token (its head as JSON, its ciphertext as bytes).
    const storedToken = (await store.getToken(tenant.id, first.id))!
    const stored = tokenCodec.encode(storedToken)

    const raw = rawEnv(join(dir, 'raw'))
    const records = sameRecords(join(dir, 'records'), tenant.id, storedToken, stored)
    const ours = () => client.tokens.create({ type: 'token', data: DATA })
    // Keys as the store's: the tenant, then a token id made as the service makes one.
    const floor = () => raw.put(Buffer.from(`${tenant.id}\u0000${floorId()}`), stored)
    const rounds = opts.quick ? 1 : 3
    /** Writes per commit of the store while `run` ran (every write of these rounds is a create). */
    const perCommit = async <T>(run: () => Promise<T>): Promise<T & { perCommit: number }> => {
      const before = store.stats()
      const result = await run()
      const after = store.stats()
      return {
        ...result,
        perCommit: (after.writes - before.writes) / Math.max(1, after.commits - before.commits),
      }
    }
    for (const writers of [1, 16, 64]) {
      const total = (opts.quick ? 100 : 400) * (writers === 1 ? 1 : writers === 16 ? 4 : 8)
      const r = await perCommit(() => alternate(ours, floor, writers, total, rounds))
      rows.push({
        group: 'file store (LMDB)',
        operation: `durable create through the service, ${writers} writer${writers === 1 ? '' : 's'}`,
        opsPerSec: r.op,
        baseline: `raw lmdb put of the same ${stored.length} bytes under a ${floorKeys} id, same sync`,
        baselineOpsPerSec: r.base,
        ratio: r.base / r.op,
        goal: '≥ 0.7 of the floor',
        note: `${note(r)}; ${r.perCommit.toFixed(1)} creates a commit`,
      })
      const same = await alternate(ours, records.create, writers, total, rounds)
      rows.push({
        group: 'file store (LMDB)',
        operation: `the same creates against the records they write, ${writers} writer${writers === 1 ? '' : 's'}`,
        opsPerSec: same.op,
        baseline:
          'raw lmdb writing what a create must: its guard read, the token, an index entry per term, the count, one transaction each, same sync',
        baselineOpsPerSec: same.base,
        ratio: same.base / same.op,
        note: note(same),
      })
      if (writers !== 64) continue
      const m = await alternate(
        () => inMemory.client.tokens.create({ type: 'token', data: DATA }),
        floor,
        writers,
        total,
        rounds,
      )
      rows.push({
        group: 'file store (LMDB)',
        operation: `the same creates on the memory store (the service alone), ${writers} writers`,
        opsPerSec: m.op,
        baseline: `raw lmdb put of the same ${stored.length} bytes under a ${floorKeys} id, same sync`,
        baselineOpsPerSec: m.base,
        ratio: m.base / m.op,
        note: note(m),
      })
    }

    // Gets: ours through the client; the floor a raw get of the same stored bytes (keys that were
    // put: a hit, as ours are) plus one AES-GCM decryption.
    const ids: string[] = []
    for (let i = 0; i < 200; i++) ids.push((await ours()).id)
    const rawKeys = ids.map((id) => Buffer.from(`${tenant.id}\u0000${id}`))
    await raw.transaction(() => {
      for (const k of rawKeys) raw.put(k, stored)
    })
    const aesKey = randomBytes(32)
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', aesKey, iv)
    const sealed = Buffer.concat([cipher.update(JSON.stringify(DATA)), cipher.final()])
    const tag = cipher.getAuthTag()
    let g = 0
    const getOurs = () => client.tokens.get(ids[g++ % ids.length]!)
    const getFloor = async () => {
      const bytes = raw.getBinary(rawKeys[g++ % rawKeys.length]!)
      if (bytes?.length !== stored.length) throw new Error('bench: the floor read a key that is not there')
      const d = createDecipheriv('aes-256-gcm', aesKey, iv)
      d.setAuthTag(tag)
      JSON.parse(Buffer.concat([d.update(sealed), d.final()]).toString())
      return bytes
    }
    const total = opts.quick ? 5000 : 40_000
    const r = await alternate(getOurs, getFloor, 1, total, rounds)
    rows.push({
      group: 'file store (LMDB)',
      operation: 'get through the service (authenticate, rules, read, decrypt)',
      opsPerSec: r.op,
      baseline: 'raw lmdb get of the same stored bytes + one AES-256-GCM decryption',
      baselineOpsPerSec: r.base,
      ratio: r.base / r.op,
      goal: '≥ 0.7 of the floor',
      note: note(r),
    })
    const memIds: string[] = []
    for (let i = 0; i < 200; i++)
      memIds.push((await inMemory.client.tokens.create({ type: 'token', data: DATA })).id)
    const m = await alternate(
      () => inMemory.client.tokens.get(memIds[g++ % memIds.length]!),
      getFloor,
      1,
      total,
      rounds,
    )
    rows.push({
      group: 'file store (LMDB)',
      operation: 'the same gets on the memory store (the service alone)',
      opsPerSec: m.op,
      baseline: 'raw lmdb get of the same stored bytes + one AES-256-GCM decryption',
      baselineOpsPerSec: m.base,
      ratio: m.base / m.op,
      note: note(m),
    })
    await raw.close()
    await records.close()
    await inMemory.service.close()
    await service.close()
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
  return rows
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(auditLogOff ? 'the services: auditLog false' : 'the services: the audit log on (the default)')
  for (const row of await run({ quick: process.env['BENCH_QUICK'] === '1' }))
    console.log(
      `${row.operation}: ${row.opsPerSec.toFixed(0)}/s vs ${row.baseline}: ${row.baselineOpsPerSec.toFixed(0)}/s (${row.note})`,
    )
}
