/**
 * Whether a read's audit entry can fit in what 0.8 leaves, on each store, with a group stored as
 * one record: CPU time (`process.cpuUsage`, so a busy machine bends it less than a rate).
 *
 * 1. `get off` / `get on`: CPU µs per get of the built package (`dist/`), 64 gets in flight over
 *    64 tokens, with `auditLog: false` and with the log on, in alternating rounds of GETS gets.
 * 2. The floor of a read's entry with a group as one record, no service, per entry over groups
 *    of 64 entries of 64 tokens (what a group commit makes at 64 gets in flight):
 *    - `entry`: the least a tamper-evident entry takes: its object (tenant, lane and seq, actor,
 *      entity, operation, message, outcome, time: one `toISOString` a group), the group's text as
 *      one native `JSON.stringify` of the whole group, and one HMAC-SHA-256 of it;
 *    - `memory`: that, and the group kept as one record (a `Map` set) with an entity index entry
 *      per entry (nested maps by type then id, each an array of [group, offset]) and the group in
 *      a time-ordered array;
 *    - `lmdb`: `entry`, and one unsynced LMDB transaction a group (the file store's options): the
 *      group as one value (its MAC and the text already made for it), one time key a group and one entity index key per distinct entity (64
 *      a group here), the least that keeps a page by entity at the cost of its page; and the
 *      same without the entity index, to show its share.
 *
 * The ceiling a store can reach with such records is `off / (off + floor)`, before any of the
 * service's own work for the entry (its context, promise, group bookkeeping): if it is under 0.8,
 * 0.8 is out of reach on that store this way.
 *
 * `npm run build` first; `node --import tsx bench/audit-floor.bench.ts` (BENCH_GROUPS, default
 * 1000 groups a floor; AUDIT_FLOOR_GETS, default 20 000 gets a round; 3 rounds; about 40 s).
 */
import { createHmac, randomBytes, randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { open, TransactionFlags } from 'lmdb'
import { built } from './built.js'

const GROUPS = Number(process.env['BENCH_GROUPS'] ?? 1000)
const GETS = Number(process.env['AUDIT_FLOOR_GETS'] ?? 20_000)
const ROUNDS = 3
const SIZE = 64
const { entry, memory, file } = await built()
const masterKey = randomBytes(32)

/** CPU µs of `run`. */
async function cpu(run: () => Promise<unknown> | unknown): Promise<number> {
  const before = process.cpuUsage()
  await run()
  const spent = process.cpuUsage(before)
  return spent.user + spent.system
}

/** A client of a fresh service on `store`, and 64 tokens to read. */
async function reader(store: Parameters<typeof entry.createService>[0]['store'], auditLog: boolean) {
  const service = entry.createService({ store, clock: entry.systemClock, masterKey, runner: null, auditLog })
  const tenant = await service.admin.createTenant({ name: 'floor' })
  const { key } = await service.admin.createApplication({
    tenantId: tenant.id,
    name: 'floor',
    type: 'private',
    permissions: ['token:create', 'token:read'],
  })
  const client = service.connect(key)
  const ids: string[] = []
  for (let i = 0; i < SIZE; i++) ids.push((await client.tokens.create({ type: 'token', data: `v${i}` })).id)
  let i = 0
  /** GETS gets, 64 in flight. */
  const gets = async () => {
    let left = GETS
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (left-- > 0) await client.tokens.get(ids[i++ % SIZE]!)
      }),
    )
  }
  return { gets, close: () => service.close() }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/** Median CPU µs per get with the log off and on, alternating rounds after a warm-up of each. */
async function perGet(kind: 'memory' | 'file'): Promise<[off: number, on: number]> {
  const dirs: string[] = []
  const store = async () => {
    if (kind === 'memory') return memory.memoryStore()
    const dir = mkdtempSync(join(tmpdir(), 'tv-audit-floor-'))
    dirs.push(dir)
    return file.fileStore({ path: dir })
  }
  const off = await reader(await store(), false)
  const on = await reader(await store(), true)
  await off.gets()
  await on.gets()
  const offs: number[] = []
  const ons: number[] = []
  for (let r = 0; r < ROUNDS; r++) {
    offs.push((await cpu(off.gets)) / GETS)
    ons.push((await cpu(on.gets)) / GETS)
  }
  await off.close()
  await on.close()
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
  return [median(offs), median(ons)]
}

const auditKey = randomBytes(32)
const tenant = randomUUID()
const actor = randomUUID()
const lane = `${randomUUID()}.000000`
const tokens = Array.from({ length: SIZE }, () => randomUUID())
let seq = 0

interface Entry {
  tenant_id: string
  id: string
  lane: string
  seq: number
  actor_id: string
  actor_type: string
  entity_type: string
  entity_id: string
  operation: string
  message: string
  outcome: string
  created_at: string
}

/** The least a group of tamper-evident entries takes: the objects, one text, one HMAC. */
function group(): { entries: Entry[]; text: string; mac: string } {
  const at = new Date().toISOString()
  const entries: Entry[] = []
  for (const id of tokens) {
    const s = seq++
    entries.push({
      tenant_id: tenant,
      id: `${lane}:${String(s).padStart(12, '0')}`,
      lane,
      seq: s,
      actor_id: actor,
      actor_type: 'application',
      entity_type: 'token',
      entity_id: id,
      operation: 'read',
      message: 'token.get: answered masked',
      outcome: 'success',
      created_at: at,
    })
  }
  const text = JSON.stringify(entries)
  const mac = createHmac('sha256', auditKey).update(text).digest('base64url')
  return { entries, text, mac }
}

/** CPU µs per entry of GROUPS groups, each made by `group()` and given to `keep`. */
async function floor(keep: (g: ReturnType<typeof group>) => unknown): Promise<number> {
  return (
    (await cpu(() => {
      for (let n = 0; n < GROUPS; n++) keep(group())
    })) /
    (GROUPS * SIZE)
  )
}

/** The memory floor: a group a `Map` record, an entity index entry per entry, a time order. */
function memoryKeeper() {
  const groups = new Map<string, { entries: Entry[]; mac: string }>()
  const byTime: string[] = []
  const byEntity = new Map<string, Map<string, [string, number][]>>()
  return (g: ReturnType<typeof group>) => {
    const id = g.entries[0]!.id
    groups.set(id, { entries: g.entries, mac: g.mac })
    byTime.push(id)
    for (let i = 0; i < g.entries.length; i++) {
      const e = g.entries[i]!
      let ofType = byEntity.get(e.entity_type)
      if (!ofType) {
        ofType = new Map()
        byEntity.set(e.entity_type, ofType)
      }
      const list = ofType.get(e.entity_id)
      if (list) list.push([id, i])
      else ofType.set(e.entity_id, [[id, i]])
    }
  }
}

/**
 * The memory floor with the group kept as the text its MAC was made of (one string a group, which
 * the collector does not trace into) and the entity index as numbers (group × 64 + offset) in one
 * array per entity: a page then parses each group it reads from.
 */
function textKeeper() {
  const groups: string[] = []
  const byEntity = new Map<string, Map<string, number[]>>()
  return (g: ReturnType<typeof group>) => {
    const n = groups.push(g.text) - 1
    for (let i = 0; i < g.entries.length; i++) {
      const e = g.entries[i]!
      let ofType = byEntity.get(e.entity_type)
      if (!ofType) {
        ofType = new Map()
        byEntity.set(e.entity_type, ofType)
      }
      const list = ofType.get(e.entity_id)
      if (list) list.push(n * SIZE + i)
      else ofType.set(e.entity_id, [n * SIZE + i])
    }
  }
}

/** The LMDB floor: one unsynced transaction a group: its value, a time key, an entity key each. */
function lmdbKeeper(dir: string, entityIndex = true) {
  const env = open({ path: dir, maxDbs: 4, overlappingSync: false, eventTurnBatching: false })
  const groups = env.openDB({ name: 'groups', keyEncoding: 'binary', encoding: 'string' })
  const byTime = env.openDB({ name: 'byTime', keyEncoding: 'binary', encoding: 'binary' })
  const byEntity = env.openDB({ name: 'byEntity', keyEncoding: 'binary', encoding: 'binary' })
  const UNSYNCED = TransactionFlags.SYNCHRONOUS_COMMIT | TransactionFlags.NO_SYNC_FLUSH
  const k = (...parts: string[]) => Buffer.from(parts.join('\u0000'))
  const one = Buffer.from([1])
  return {
    keep: (g: ReturnType<typeof group>) =>
      env.transactionSync(() => {
        const first = g.entries[0]!
        groups.put(k(tenant, first.id), `${g.mac}\n${g.text}`)
        byTime.put(k(tenant, first.created_at, first.id), one)
        if (!entityIndex) return
        for (const e of g.entries)
          byEntity.put(k(tenant, e.entity_type, e.entity_id, e.created_at, e.id), one)
      }, UNSYNCED),
    close: () => env.close(),
  }
}

const [memOff, memOn] = await perGet('memory')
const [fileOff, fileOn] = await perGet('file')
const entryFloor = await floor(() => {})
const memoryFloor = await floor(memoryKeeper())
const textFloor = await floor(textKeeper())
const lmdbDir = mkdtempSync(join(tmpdir(), 'tv-audit-floor-lmdb-'))
const lmdb = lmdbKeeper(lmdbDir)
const lmdbFloor = await floor(lmdb.keep)
await lmdb.close()
rmSync(lmdbDir, { recursive: true, force: true })
const bareDir = mkdtempSync(join(tmpdir(), 'tv-audit-floor-lmdb-'))
const bare = lmdbKeeper(bareDir, false)
const bareFloor = await floor(bare.keep)
await bare.close()
rmSync(bareDir, { recursive: true, force: true })

const f = (x: number) => x.toFixed(2)
console.log('| store | get off µs | get on µs | on/off CPU | entry floor µs | ceiling off/(off+floor) |')
console.log('| --- | --- | --- | --- | --- | --- |')
console.log(
  `| memory | ${f(memOff)} | ${f(memOn)} | ${f(memOff / memOn)} | ${f(memoryFloor)} | ${f(memOff / (memOff + memoryFloor))} |`,
)
console.log(
  `| file | ${f(fileOff)} | ${f(fileOn)} | ${f(fileOff / fileOn)} | ${f(lmdbFloor)} | ${f(fileOff / (fileOff + lmdbFloor))} |`,
)
console.log(
  `memory, a group kept as its text: floor ${f(textFloor)} µs, ceiling ${f(memOff / (memOff + textFloor))}`,
)
console.log(
  `file, no entity index (a page by entity would cost the log): floor ${f(bareFloor)} µs, ceiling ${f(fileOff / (fileOff + bareFloor))}`,
)
console.log(`entry alone (objects, one text, one HMAC): ${f(entryFloor)} µs an entry`)
