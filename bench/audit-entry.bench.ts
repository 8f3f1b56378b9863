/**
 * What one read's audit entry costs, part by part, in CPU time per entry (`process.cpuUsage`, so a
 * busy machine bends it less than a rate): groups of 64 entries of 64 tokens, as a group commit at
 * 64 gets in flight makes them.
 *
 * - `seal`: `chained` (the entries built, their group's MAC text, one HMAC-SHA-256);
 * - `memory write` / `file write`: the store's write of the group's `log.put` ops (the file store
 *   commits entries only without a sync, as it does for reads);
 * - raw LMDB (`lmdb`, the file store's options, no service), one unsynced transaction a group:
 *   `entries` each entry put as its own JSON value under its own key (what the file store's
 *   primary database does), `group` the whole group put as one value, `group + entity index` that
 *   and one index key per entry at the entity's place in a sorted index (random places, as a
 *   token's entries land in `logsByEntity`).
 *
 * Against a get with the log off (about 12–25 µs of CPU on this machine, see docs/audit-log.md),
 * 0.8 leaves 3–6 µs for all of it.
 *
 * `node --import tsx bench/audit-entry.bench.ts` (BENCH_GROUPS, default 1000 groups a part; about
 * 30 s). Under tsx the service's parts cost about a third more than in the built package.
 */
import { createHmac, randomBytes, randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { open, TransactionFlags } from 'lmdb'
import { fileStore } from '../adapters/file/index.js'
import { memoryStore } from '../adapters/memory/index.js'
import { chained, Lanes } from '../src/audit/chain.js'
import type { EntryDraft } from '../src/audit/entries.js'
import type { LogEntry } from '../src/kernel/index.js'
import type { Store } from '../src/store/contract.js'

const GROUPS = Number(process.env['BENCH_GROUPS'] ?? 1000)
const SIZE = 64
const auditKey = randomBytes(32)
const mac = (_tenantId: string, values: readonly string[]) =>
  values.map((v) => createHmac('sha256', auditKey).update(v).digest('base64url'))
const tenant = randomUUID()
const actor = randomUUID()
const tokens = Array.from({ length: SIZE }, () => randomUUID())
const lanes = new Lanes()

const drafts = (): EntryDraft[] => {
  const at = new Date().toISOString()
  return tokens.map((id) => ({
    tenant_id: tenant,
    actor_type: 'application',
    entity_type: 'token',
    operation: 'read',
    message: 'token.get: answered masked',
    outcome: 'success',
    created_at: at,
    actor_id: actor,
    entity_id: id,
  }))
}

const sealed = (): LogEntry[] => {
  const held = lanes.take(tenant, SIZE)
  const entries = chained(mac, held, drafts()) as LogEntry[]
  lanes.settle(held, 'ok')
  return entries
}

/** CPU µs per entry of `part` over GROUPS groups, each given a fresh sealed group. */
async function perEntry(part: (entries: LogEntry[]) => unknown): Promise<number> {
  let used = 0
  for (let g = 0; g < GROUPS; g++) {
    const entries = sealed()
    const before = process.cpuUsage()
    await part(entries)
    const spent = process.cpuUsage(before)
    used += spent.user + spent.system
  }
  return used / (GROUPS * SIZE)
}

const write = (store: Store) => (entries: LogEntry[]) =>
  store.write({ ops: entries.map((entry) => ({ op: 'log.put' as const, entry })) })

const rows: [string, number][] = []
rows.push([
  'seal',
  await perEntry(() => {
    const held = lanes.take(tenant, SIZE)
    chained(mac, held, drafts())
    lanes.settle(held, 'ok')
  }),
])
rows.push(['memory write', await perEntry(write(memoryStore()))])
const fileDir = mkdtempSync(join(tmpdir(), 'tv-audit-entry-'))
const file = await fileStore({ path: fileDir })
rows.push(['file write', await perEntry(write(file))])
await file.close()
rmSync(fileDir, { recursive: true, force: true })

const lmdbDir = mkdtempSync(join(tmpdir(), 'tv-audit-lmdb-'))
const env = open({
  path: lmdbDir,
  maxDbs: 4,
  overlappingSync: false,
  eventTurnBatching: false,
  keyEncoding: 'binary',
  encoding: 'json',
})
const logs = env.openDB({ name: 'logs', keyEncoding: 'binary', encoding: 'json' })
const byEntity = env.openDB({ name: 'byEntity', keyEncoding: 'binary', encoding: 'json' })
const UNSYNCED = TransactionFlags.SYNCHRONOUS_COMMIT | TransactionFlags.NO_SYNC_FLUSH
const k = (...parts: string[]) => Buffer.from(parts.join('\u0000'))
rows.push([
  'lmdb: entries',
  await perEntry((es) =>
    env.transactionSync(() => {
      for (const e of es) logs.put(k(tenant, e.id), e)
    }, UNSYNCED),
  ),
])
rows.push([
  'lmdb: group',
  await perEntry((es) => env.transactionSync(() => logs.put(k(tenant, `g${es[0]!.id}`), es), UNSYNCED)),
])
rows.push([
  'lmdb: group + entity index',
  await perEntry((es) =>
    env.transactionSync(() => {
      logs.put(k(tenant, `h${es[0]!.id}`), es)
      for (const e of es) byEntity.put(k(tenant, 'token', e.entity_id!, e.created_at, e.id), 1)
    }, UNSYNCED),
  ),
])
await env.close()
rmSync(lmdbDir, { recursive: true, force: true })

console.log('| part | CPU µs per entry |')
console.log('| --- | --- |')
for (const [name, us] of rows) console.log(`| ${name} | ${us.toFixed(2)} |`)
